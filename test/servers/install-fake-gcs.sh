#!/bin/sh
# Builds the pinned fake-gcs-server into .cache/fake-gcs-server/<version>/ (the same place
# test/servers/fake-gcs.server.ts looks, and installs on its own when missing). Quiet on
# success; prints the build log and fails on error. Needs Go >= 1.25.
set -eu
VERSION=v1.55.1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST="$ROOT/.cache/fake-gcs-server/$VERSION"
[ -x "$DEST/fake-gcs-server" ] && exit 0
command -v go >/dev/null 2>&1 || { echo "install-fake-gcs: 'go' not found: install Go >= 1.25 (https://go.dev/dl/)" >&2; exit 1; }
mkdir -p "$DEST"
STAGING=$(mktemp -d "$DEST/.install-XXXXXX")
trap 'rm -rf "$STAGING"' EXIT
if ! LOG=$(GOBIN="$STAGING" CGO_ENABLED=0 go install "github.com/fsouza/fake-gcs-server@$VERSION" 2>&1); then
  echo "install-fake-gcs: go install github.com/fsouza/fake-gcs-server@$VERSION failed:" >&2
  echo "$LOG" >&2
  exit 1
fi
mv "$STAGING/fake-gcs-server" "$DEST/fake-gcs-server"
