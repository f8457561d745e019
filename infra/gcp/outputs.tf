output "bucket" {
  description = "Bucket holding the lease objects."
  value       = google_storage_bucket.leases.name
}

output "store_url" {
  description = "Value for LEASEHOLD_STORE (or openStore) on the electors and the API."
  value       = "gcs://${google_storage_bucket.leases.name}/${var.lease_prefix}"
}

output "service_account_email" {
  description = "Service account to run the electors, Cloud Run service or function as."
  value       = google_service_account.leasehold.email
}

output "lease_object_role" {
  description = "Custom role granting get/create/delete of objects, bound to the lease prefix only."
  value       = google_project_iam_custom_role.lease_objects.name
}
