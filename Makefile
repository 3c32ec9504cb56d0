# scheduler-profile-operator
#
# Everything a build or test needs is built here from the Go module proxy into bin/:
# no setup-envtest download, no release tarballs, no container registry.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

# Pinned versions; bump k8s with hack/update-k8s-replaces.sh and then K8S_VERSION here.
K8S_VERSION ?= v1.37.2
K8S_MAJOR := $(word 1,$(subst ., ,$(K8S_VERSION:v%=%)))
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION:v%=%)))
CONTROLLER_TOOLS_VERSION ?= v0.23.0

IMG ?= scheduler-profile-operator:dev
OPERATOR_NAMESPACE ?= scheduler-profile-operator-system
FUZZTIME ?= 20s

LOCALBIN := $(CURDIR)/bin
K8SBIN := $(LOCALBIN)/k8s
CONTROLLER_GEN := $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)

# Version ldflags so that every Kubernetes binary reports $(K8S_VERSION) instead of v0.0.0-master.
VERSION_PKGS := k8s.io/component-base/version k8s.io/client-go/pkg/version
VERSION_LDFLAGS := $(foreach p,$(VERSION_PKGS),-X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=$(K8S_MAJOR) -X $(p).gitMinor=$(K8S_MINOR))
LDFLAGS := -s -w $(VERSION_LDFLAGS)

GO_SOURCES := $(shell find . -name '*.go' -not -path './bin/*' -not -path './hack/tools/*')
# Packages of the unit tier: everything but the tiers under test/ that need a control plane.
UNIT_PKGS = $$(go list ./... | grep -v /test/)

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy, defaults and conversion code.
	$(CONTROLLER_GEN) object paths=./api/...
	@if [[ -x hack/update-codegen.sh ]]; then hack/update-codegen.sh; fi

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC manifests under config/.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./controllers/... output:rbac:artifacts:config=config/rbac

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -s -w $(GO_SOURCES)

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: verify
verify: generate manifests ## Regenerate everything and fail on any diff or untracked file; gofmt and vet.
	@out="$$(gofmt -s -l $(GO_SOURCES))"; if [[ -n "$$out" ]]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	hack/update-k8s-replaces.sh $(K8S_VERSION)
	go mod tidy -diff
	go vet ./...
	@status="$$(git status --porcelain --untracked-files=all)"; if [[ -n "$$status" ]]; then \
		echo "generated files are out of date or untracked (run make generate manifests and commit):"; \
		echo "$$status"; git --no-pager diff --stat; exit 1; fi

##@ Build

.PHONY: build
build: bin/manager bin/kube-scheduler ## Build the operator and the scheduler.

# Static builds (CGO_ENABLED=0): the Dockerfile runs this same target for the distroless image.
bin/manager: $(GO_SOURCES) go.mod go.sum
	CGO_ENABLED=0 go build -ldflags '$(LDFLAGS)' -o $@ .

bin/kube-scheduler: $(GO_SOURCES) go.mod go.sum
	CGO_ENABLED=0 go build -ldflags '$(LDFLAGS)' -o $@ ./scheduler

.PHONY: run
run: manifests ## Run the operator against the current kubeconfig.
	OPERATOR_NAMESPACE=$(OPERATOR_NAMESPACE) go run . --leader-elect=false

.PHONY: install
install: manifests ## Install the CRD into the cluster of the current kubeconfig.
	kubectl apply --server-side -f config/crd/bases

.PHONY: uninstall
uninstall: ## Remove the CRD (and with it every SchedulerProfile) from the cluster.
	kubectl delete --ignore-not-found -f config/crd/bases

##@ Control-plane binaries (from the Go module proxy; the Go build cache makes rebuilds a link step)

.PHONY: k8s-binaries
k8s-binaries: $(K8SBIN)/kube-apiserver $(K8SBIN)/kube-controller-manager $(K8SBIN)/etcd $(K8SBIN)/kwok ## Build kube-apiserver, kube-controller-manager, etcd and kwok into bin/k8s.

$(K8SBIN)/kube-apiserver $(K8SBIN)/kube-controller-manager: go.mod go.sum
	go build -ldflags '$(LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

$(K8SBIN)/etcd: go.mod go.sum
	go build -ldflags '-s -w' -o $@ go.etcd.io/etcd/server/v3

# kwok has dependency versions of its own, so it is built from its own tools module.
$(K8SBIN)/kwok: hack/tools/kwok/go.mod hack/tools/kwok/go.sum
	cd hack/tools/kwok && go build -ldflags '-s -w' -o $@ sigs.k8s.io/kwok/cmd/kwok

# Tools carry their version in the file name, so bumping the version installs the new one.
$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

##@ Test

.PHONY: test
test: test-unit test-fuzz test-integration test-e2e ## Run every test tier.

.PHONY: test-unit
test-unit: ## Unit tests: builders, rendering, plugins.
	go test $(UNIT_PKGS)

.PHONY: test-fuzz
test-fuzz: ## Fuzz Render and Validate for a bounded time (FUZZTIME).
	go test ./scheduler/profile -run '^$$' -fuzz FuzzRenderValidate -fuzztime $(FUZZTIME)

.PHONY: bench
bench: ## Benchmark Validate.
	go test ./scheduler/profile -run '^$$' -bench Validate -benchmem -count 5

.PHONY: test-integration
test-integration: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd bin/kube-scheduler ## Integration tests on a real kube-apiserver and etcd (envtest), with the real scheduler binary.
	KUBEBUILDER_ASSETS=$(K8SBIN) go test ./test/integration/... -count=1 -v -timeout 20m

.PHONY: test-e2e
test-e2e: k8s-binaries bin/kube-scheduler ## End-to-end tests on a local simulated cluster (etcd, kube-apiserver, kube-controller-manager, kwok).
	LOCALCLUSTER_BIN_DIR=$(K8SBIN) LOCALCLUSTER_SCHEDULER=$(LOCALBIN)/kube-scheduler go test ./test/localcluster/... -count=1 -v -timeout 20m
