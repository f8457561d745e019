variable "project_id" {
  description = "Project that owns the bucket, the service account and the custom roles."
  type        = string
}

variable "location" {
  description = "Bucket location: a region near the electors (e.g. europe-west1) keeps every CAS one short round trip."
  type        = string
  default     = "US-CENTRAL1"
}

variable "bucket_name" {
  description = "Globally unique bucket name for the lease objects."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name: expected 3-63 characters of a-z 0-9 . _ -, starting and ending with a letter or digit."
  }
}

variable "lease_prefix" {
  description = "Object name prefix the leases live under; must match the store's prefix (LEASEHOLD_STORE=gcs://BUCKET/PREFIX). Keep the trailing slash."
  type        = string
  default     = "leases/"

  validation {
    condition     = can(regex("^[a-z0-9._-]+(/[a-z0-9._-]+)*/$", var.lease_prefix))
    error_message = "lease_prefix: expected path segments of a-z 0-9 . _ - ending with \"/\", e.g. \"leases/\"."
  }
}

variable "scratch_prefix" {
  description = "A prefix outside the leases for throw-away objects (smoke tests, exports); objects there are deleted after scratch_days."
  type        = string
  default     = "scratch/"
}

variable "scratch_days" {
  description = "Age in days after which objects under scratch_prefix are deleted."
  type        = number
  default     = 7
}

variable "service_account_id" {
  description = "Account id (the part before @) of the service account the electors and the API run as."
  type        = string
  default     = "leasehold"
}

variable "role_id_prefix" {
  description = "Prefix of the two custom role ids (letters, digits, underscores, periods). A deleted custom role id stays reserved for 37 days: change this to re-create quickly."
  type        = string
  default     = "leasehold"
}

variable "allow_list" {
  description = "Grant storage.objects.list on the bucket (needed by the API's list route and `leasehold status`, not by the elector). GCS checks list on the bucket, so it cannot be limited to the prefix."
  type        = bool
  default     = true
}

variable "labels" {
  description = "Labels for the bucket."
  type        = map(string)
  default     = { app = "leasehold" }
}
