#!/usr/bin/env bash
# Regenerates deepcopy, defaulting and conversion code of the out-of-tree plugin args types
# (scheduler/apis/config and scheduler/apis/config/v1, and those of the plugin module
# examples/avoidnodelabels) with k8s.io/code-generator.
# Idempotent: running it twice leaves the tree unchanged. Called by `make generate`.
set -euo pipefail

# Keep in step with the k8s.io staging modules in go.mod.
CODEGEN_VERSION="${CODEGEN_VERSION:-v0.37.2}"

cd "$(dirname "$0")/.."
root="$(pwd)"
export GOBIN="${root}/bin"

# The generators are pinned here rather than in go.mod so that the module graph of the
# operator does not carry code-generator's dependencies.
for gen in deepcopy-gen defaulter-gen conversion-gen; do
  go install "k8s.io/code-generator/cmd/${gen}@${CODEGEN_VERSION}"
done

# generate MODULE_DIR APIS: the args types of the module in MODULE_DIR, internal in APIS and
# versioned in APIS/v1.
generate() (
  cd "$1"
  local module internal versioned
  module="$(go list -m)"
  internal="${module}/$2"
  versioned="${module}/$2/v1"
  # Start from scratch so that a file whose types went away does not linger. No --go-header-file:
  # the project's sources carry no license header, so neither does generated code.
  find "$2" -name 'zz_generated.*.go' -delete
  "${GOBIN}/deepcopy-gen" --output-file zz_generated.deepcopy.go "${internal}" "${versioned}"
  "${GOBIN}/defaulter-gen" --output-file zz_generated.defaults.go "${versioned}"
  "${GOBIN}/conversion-gen" --output-file zz_generated.conversion.go "${versioned}"
)

generate . scheduler/apis/config
generate examples/avoidnodelabels apis/config
