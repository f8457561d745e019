# leasehold on Google Cloud Storage: one bucket for the lease objects (<prefix><name>.json, the
# object generation is the CAS revision), and a service account that can read and write objects
# under the lease prefix and nothing else. See README.md for the reasoning behind each setting.

terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source = "hashicorp/google"
      # soft_delete_policy needs 5.22+; 6.x keeps these resources unchanged.
      version = ">= 5.22, < 7.0"
    }
  }
}

provider "google" {
  project = var.project_id
}

resource "google_storage_bucket" "leases" {
  name     = var.bucket_name
  location = var.location
  labels   = var.labels

  # IAM only, no per-object ACLs: the prefix-scoped IAM binding below is the whole access story.
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  # Every renewal overwrites the lease object. With versioning on, each overwrite would keep a
  # noncurrent copy (thousands a day per lease); the store never reads old generations.
  versioning {
    enabled = false
  }

  # Soft delete (7 days by default) also keeps every overwritten generation, billed for at least
  # the retention period. Lease records are tiny and rewritten every few seconds: keep none.
  soft_delete_policy {
    retention_duration_seconds = 0
  }

  # Never delete live lease objects: a released lease keeps its record (holder null) so that terms,
  # the fencing tokens, never restart at 1. An age-based rule on the lease prefix would delete a
  # released or idle lease's record after N days and reuse terms. The two rules below cannot touch
  # a live object under the lease prefix:

  # 1. Only noncurrent versions (none exist while versioning is off; this cleans up after anyone
  #    who turns versioning on by hand).
  lifecycle_rule {
    condition {
      with_state                 = "ARCHIVED"
      days_since_noncurrent_time = 1
    }
    action {
      type = "Delete"
    }
  }

  # 2. Only objects under a separate scratch prefix (smoke tests, exports), never the lease prefix.
  lifecycle_rule {
    condition {
      age            = var.scratch_days
      matches_prefix = [var.scratch_prefix]
    }
    action {
      type = "Delete"
    }
  }

  # Lease history lives in these objects; refuse to destroy a bucket that still holds them.
  force_destroy = false

  lifecycle {
    precondition {
      condition     = !startswith(var.scratch_prefix, var.lease_prefix) && !startswith(var.lease_prefix, var.scratch_prefix)
      error_message = "scratch_prefix must not overlap lease_prefix: the scratch lifecycle rule would delete lease records."
    }
  }
}

resource "google_service_account" "leasehold" {
  account_id   = var.service_account_id
  display_name = "leasehold electors and API"
  description  = "Reads and writes lease objects under gs://${var.bucket_name}/${var.lease_prefix}"
}

# The store's calls need exactly these: GET (media and metadata) = get; an upload with
# ifGenerationMatch=0 = create; replacing an existing object = create + delete (GCS requires
# delete permission to overwrite). Not granted: objects.update (metadata patch), setIamPolicy,
# restore, multipart/resumable-upload permissions: the store never uses them.
resource "google_project_iam_custom_role" "lease_objects" {
  role_id     = "${var.role_id_prefix}LeaseObjects"
  title       = "leasehold lease objects"
  description = "Read, create and overwrite lease objects (bound with a prefix condition)."
  permissions = [
    "storage.objects.get",
    "storage.objects.create",
    "storage.objects.delete",
  ]
}

# GCS authorises objects.list against the bucket, not an object name, so a prefix condition on
# it would never match: list gets its own role, bound without a condition (object names only).
resource "google_project_iam_custom_role" "lease_list" {
  count       = var.allow_list ? 1 : 0
  role_id     = "${var.role_id_prefix}LeaseList"
  title       = "leasehold lease listing"
  description = "List object names in the lease bucket (API list route, status)."
  permissions = ["storage.objects.list"]
}

resource "google_storage_bucket_iam_member" "lease_objects" {
  bucket = google_storage_bucket.leases.name
  role   = google_project_iam_custom_role.lease_objects.name
  member = "serviceAccount:${google_service_account.leasehold.email}"

  condition {
    title       = "leasehold-lease-prefix"
    description = "Only objects under ${var.lease_prefix}"
    expression  = "resource.name.startsWith(\"projects/_/buckets/${google_storage_bucket.leases.name}/objects/${var.lease_prefix}\")"
  }
}

resource "google_storage_bucket_iam_member" "lease_list" {
  count  = var.allow_list ? 1 : 0
  bucket = google_storage_bucket.leases.name
  role   = google_project_iam_custom_role.lease_list[0].name
  member = "serviceAccount:${google_service_account.leasehold.email}"
}
