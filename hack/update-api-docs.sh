#!/usr/bin/env bash
# Regenerates docs/reference/api.md, the API reference of scheduling.schedops.io, from the Go types
# and doc comments under api/ with crd-ref-docs. crd-ref-docs is built from its own tools module
# (hack/tools/crd-ref-docs, whose go.mod pins the version) into bin/, once per version.
# Idempotent: running it twice leaves the tree unchanged. Called by `make generate`.
set -euo pipefail

cd "$(dirname "$0")/.."
root="$(pwd)"
tools="hack/tools/crd-ref-docs"

version="$(awk '$1 == "github.com/elastic/crd-ref-docs" { print $2 }' "${tools}/go.mod")"
[[ -n "$version" ]] || { echo "cannot find the crd-ref-docs version in ${tools}/go.mod" >&2; exit 1; }
bin="${root}/bin/crd-ref-docs-${version}"

# The version carries in the file name, so bumping it in go.mod builds the new one.
if [[ ! -x "$bin" ]]; then
  (cd "$tools" && go build -ldflags "-s -w -X main.buildVersion=${version}" -o "$bin" github.com/elastic/crd-ref-docs)
fi

out="docs/reference/api.md"
mkdir -p "$(dirname "$out")"
"$bin" \
  --log-level=ERROR \
  --source-path=api \
  --config=hack/api-docs/config.yaml \
  --renderer=markdown \
  --templates-dir=hack/api-docs/templates \
  --output-path="$out"
