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

# The version of the tree, from CHANGELOG.md's first section: a released version as it is named
# there; while that section is "Unreleased", the minor version after the last release as a
# pre-release, <x>.<y+1>.0-dev, so that no build of unreleased changes carries a released
# version. Releasing renames the section, and VERSION follows. `make verify` regenerates the
# bundle and the chart with it; `make bundle VERSION=x.y.z IMG=...` and make release take another.
# Without IMG on the command line the bundle and the chart name the release image of VERSION, so a
# developer's IMG never leaks into them.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell awk '/^## / { if ($$2 == "Unreleased") { dev = 1; next } split($$2, v, "."); print (dev ? v[1] "." v[2] + 1 ".0-dev" : $$2); exit }' CHANGELOG.md)
endif
# The release before VERSION (CHANGELOG.md's first released section of another version), which the
# bundle's CSV replaces (spec.replaces), so that OLM upgrades a subscription from it; empty when
# there is none. hack/releases.txt names the commit of each release: test-olm builds the previous
# one from it (PREVIOUS_DIR) to upgrade from.
PREVIOUS_VERSION := $(shell awk -v cur='$(VERSION)' '/^## [0-9]/ && $$2 != cur { print $$2; exit }' CHANGELOG.md)
PREVIOUS_COMMIT := $(shell awk -v v='$(PREVIOUS_VERSION)' '$$1 == v { print $$2 }' hack/releases.txt)
IMAGE_TAG_BASE ?= ghcr.io/schedops/scheduler-profile-operator
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
BUNDLE_OPERATOR_IMG = $(if $(filter command line,$(origin IMG)),$(IMG),$(IMAGE_TAG_BASE):v$(VERSION))
CHANNELS ?= candidate-v0
DEFAULT_CHANNEL ?= candidate-v0
CONTAINER_TOOL ?= docker

LOCALBIN := $(CURDIR)/bin
K8SBIN := $(LOCALBIN)/k8s
CONTROLLER_GEN := $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
# kustomize is built from its own tools module, whose go.mod pins the version.
KUSTOMIZE_VERSION := $(shell awk '$$1 == "sigs.k8s.io/kustomize/kustomize/v5" { print $$2 }' hack/tools/kustomize/go.mod)
KUSTOMIZE := $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
# golangci-lint, with the kube-api-linter and logcheck plugins compiled in, is built from its own
# tools module, whose go.mod pins golangci-lint and the plugins.
GOLANGCI_LINT_VERSION := $(shell awk '$$1 == "github.com/golangci/golangci-lint/v2" { print $$2 }' hack/tools/golangci-lint/go.mod)
GOLANGCI_LINT := $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# promtool is built from its own tools module (hack/tools/promtool), whose go.mod pins Prometheus;
# the tests of the alerts and the dashboard live there too, with Prometheus' PromQL parser.
PROMETHEUS_VERSION := $(shell awk '$$1 == "github.com/prometheus/prometheus" { print $$2 }' hack/tools/promtool/go.mod)
PROMTOOL := $(LOCALBIN)/promtool-$(PROMETHEUS_VERSION)
# Helm (the chart's lint, package and the Helm tier) is built from its own tools module, whose
# go.mod pins the release.
HELM_VERSION := $(shell awk '$$1 == "helm.sh/helm/v4" { print $$2 }' hack/tools/helm/go.mod)
HELM := $(LOCALBIN)/helm-$(HELM_VERSION)

# make image's tarball and tool, and the real node's sandbox image (see the image targets). Defined
# here, before any rule names them as prerequisites: make expands those when it reads the rule.
IMAGE_TAR ?= $(LOCALBIN)/image.tar
IMAGE_TOOL := $(LOCALBIN)/image
IMAGE_LABELS := org.opencontainers.image.title=scheduler-profile-operator \
	org.opencontainers.image.source=https://github.com/schedops/scheduler-profile-operator
# The sandbox (pause) image of the real node: no registry is reachable to pull the upstream one.
PAUSE_IMAGE_TAR := $(LOCALBIN)/pause.tar
PAUSE_IMAGE := localcluster.local/pause:3.10

# Version ldflags so that every Kubernetes binary reports $(K8S_VERSION) instead of v0.0.0-master.
VERSION_PKGS := k8s.io/component-base/version k8s.io/client-go/pkg/version
VERSION_LDFLAGS := $(foreach p,$(VERSION_PKGS),-X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=$(K8S_MAJOR) -X $(p).gitMinor=$(K8S_MINOR))
LDFLAGS := -s -w $(VERSION_LDFLAGS)
# Every build and test of make runs without cgo. The binaries must be static (distroless), and a
# package built with cgo differs from the same package built without: net, and everything that
# imports it, most of Kubernetes, would be compiled twice, once for the binaries and once for the
# tests and control-plane binaries. One setting lets the tiers reuse what make demo compiled.
CGO_ENABLED ?= 0
export CGO_ENABLED
# go test runs without go vet's checks (-vet=off): make verify runs go vet on every package, tests
# included, and golangci-lint; the checks go test runs first read every package a test imports.
# After make demo, compiling and linking every test of the operator module took 524 CPU-seconds
# with them and 312 without (270 and 160 s on 2 cores). go build and go vet ignore the setting.
GOFLAGS := $(strip $(GOFLAGS) -vet=off)
export GOFLAGS

GO_SOURCES := $(shell find . -name '*.go' -not -path './bin/*' -not -path './hack/tools/*')

# The plugin module examples/avoidnodelabels (its own go.mod), built into its own manager and
# scheduler with pkg/operator, and into its own image.
EXAMPLE := examples/avoidnodelabels
EXAMPLE_BIN := $(LOCALBIN)/$(EXAMPLE)
EXAMPLE_IMG ?= avoidnodelabels-operator:dev
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
generate: $(CONTROLLER_GEN) ## Generate deepcopy, defaults and conversion code, and the API, conditions, labels, advice and CLI reference in docs/reference.
	$(CONTROLLER_GEN) object paths=./api/...
	@if [[ -x hack/update-codegen.sh ]]; then hack/update-codegen.sh; fi
	hack/update-api-docs.sh
	go run ./hack/conditions-doc api/v1alpha1/conditions.go > docs/reference/conditions.md
	go run ./hack/advice-doc > docs/reference/advice.md
	go run ./hack/labels-doc api/v1alpha1/labels.go > docs/reference/labels.md
	go run ./hack/cli-doc > docs/reference/cli.md

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD, RBAC and webhook manifests under config/.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths=./controllers/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths="./controllers/...;./webhooks/..." output:webhook:artifacts:config=config/webhook

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -s -w $(GO_SOURCES)

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml, with kube-api-linter and logcheck) on the whole module, tests included, and on examples/avoidnodelabels.
	$(GOLANGCI_LINT) run ./...
	cd $(EXAMPLE) && $(GOLANGCI_LINT) run ./...

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint with its plugins into bin/ (from hack/tools/golangci-lint).

$(GOLANGCI_LINT): hack/tools/golangci-lint/go.mod hack/tools/golangci-lint/go.sum hack/tools/golangci-lint/main.go
	cd hack/tools/golangci-lint && go build -ldflags '-s -w' -o $@ .

.PHONY: verify
verify: generate manifests bundle chart $(GOLANGCI_LINT) $(HELM) ## Regenerate everything and fail on any diff or untracked file; gofmt, vet, lint, helm lint of the chart, no build output tracked (hack/checktree).
	@out="$$(gofmt -s -l $(GO_SOURCES))"; if [[ -n "$$out" ]]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	hack/update-k8s-replaces.sh $(K8S_VERSION)
	go mod tidy -diff
	cd $(EXAMPLE) && go mod tidy -diff && go vet ./...
	go vet ./...
	$(GOLANGCI_LINT) run ./...
	cd $(EXAMPLE) && $(GOLANGCI_LINT) run ./...
	$(HELM) lint --strict $(CHART_DIR)
	go run ./hack/checktree
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

.PHONY: build-example
build-example: $(EXAMPLE_BIN)/manager $(EXAMPLE_BIN)/kube-scheduler ## Build the plugin module examples/avoidnodelabels into its own manager and scheduler (bin/examples/avoidnodelabels).

$(EXAMPLE_BIN)/manager $(EXAMPLE_BIN)/kube-scheduler: $(GO_SOURCES) go.mod go.sum $(EXAMPLE)/go.mod $(EXAMPLE)/go.sum
	cd $(EXAMPLE) && CGO_ENABLED=0 go build -ldflags '$(LDFLAGS)' -o $@ ./cmd/$(notdir $@)

.PHONY: run
run: manifests ## Run the operator against the current kubeconfig, without its webhook (the apiserver cannot reach it).
	OPERATOR_NAMESPACE=$(OPERATOR_NAMESPACE) RELATED_IMAGE_SCHEDULER=$(IMG) go run . --leader-elect=false --enable-webhook=false

.PHONY: install
install: manifests ## Install the CRD into the cluster of the current kubeconfig.
	kubectl apply --server-side -f config/crd/bases

.PHONY: uninstall
uninstall: ## Remove the CRD (and with it every SchedulerProfile) from the cluster.
	kubectl delete --ignore-not-found -f config/crd/bases

##@ Control-plane binaries (from the Go module proxy; the Go build cache makes rebuilds a link step)

.PHONY: k8s-binaries
k8s-binaries: $(K8SBIN)/kube-apiserver $(K8SBIN)/kube-controller-manager $(K8SBIN)/etcd $(K8SBIN)/kwok $(K8SBIN)/kubectl ## Build kube-apiserver, kube-controller-manager, etcd, kwok and kubectl into bin/k8s.

$(K8SBIN)/kube-apiserver $(K8SBIN)/kube-controller-manager: go.mod go.sum
	go build -ldflags '$(LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

# kubelet and kube-proxy, for the local cluster's real node, bring dependencies of their own (the CRI
# streaming server, netlink, ...), so they are built from their own tools module, whose replace
# block is the operator's.
$(K8SBIN)/kubelet $(K8SBIN)/kube-proxy: hack/tools/kubelet/go.mod hack/tools/kubelet/go.sum
	cd hack/tools/kubelet && go build -ldflags '$(LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/$(notdir $@)

# The real node's container runtime, CNI plugins and packet filter come from Debian's packages,
# which make test-deps (or make node-deps) installs; make test only checks for them. NODE_NEEDS are
# those packages with the programs the node runs from each (internal/localcluster looks for the
# same); containernetworking-plugins provides the CNI plugins in NODE_CNI_DIR.
NODE_NEEDS := containerd:containerd,containerd-shim-runc-v2,ctr runc:runc iproute2:ip conntrack:conntrack nftables:nft \
	iptables:iptables,iptables-save,iptables-restore,ip6tables,ip6tables-save,ip6tables-restore
NODE_CNI_DIR := /usr/lib/cni
NODE_CNI_PLUGINS := bridge host-local portmap loopback
# A shell command that prints the packages of which a program or plugin is missing: nothing when the
# real node has all it needs. Only those are installed, so that, say, Docker's containerd.io stays.
NODE_MISSING = for need in $(NODE_NEEDS); do for b in $$(echo $$need | cut -d: -f2 | tr , ' '); do \
	command -v $$b >/dev/null || { printf ' %s' $$(echo $$need | cut -d: -f1); break; }; done; done; \
	for p in $(NODE_CNI_PLUGINS); do [ -x $(NODE_CNI_DIR)/$$p ] || { printf ' containernetworking-plugins'; break; }; done
.PHONY: node-deps
node-deps: ## Install the Debian packages of the real node (containerd, runc, CNI plugins, iptables, conntrack, nftables, iproute2) that are missing; needs root.
	@missing="$$($(NODE_MISSING))"; if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" -ne 0 ]; then echo "node-deps: installing$$missing needs root: run sudo make node-deps"; exit 1; fi; \
		echo "node-deps: installing$$missing"; apt-get install -y --no-install-recommends$$missing; fi

# test-html's browser: Debian's headless shell of Chromium (Chromium's renderer without the desktop
# browser and its GTK), 87 MB to download and 282 MB on disk. A chromium already on the PATH, or
# $CHROMIUM, serves as well.
CHROMIUM_PACKAGES := chromium-headless-shell
CHROMIUM_FOUND = { [ -n "$$CHROMIUM" ] && command -v "$$CHROMIUM"; } >/dev/null || command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null
.PHONY: chromium
chromium: ## Install Debian's headless Chromium (chromium-headless-shell) for test-html unless a Chromium is installed; needs root.
	@if ! ($(CHROMIUM_FOUND)); then \
		if [ "$$(id -u)" -ne 0 ]; then echo "chromium: Debian's $(CHROMIUM_PACKAGES) is not installed and installing it needs root: run sudo make chromium"; exit 1; fi; \
		echo "chromium: installing $(CHROMIUM_PACKAGES)"; apt-get install -y --no-install-recommends $(CHROMIUM_PACKAGES); fi

.PHONY: test-deps
test-deps: node-deps chromium ## Install what the real-node (test-node) and browser (test-html) tiers need from Debian's packages, unless it is there; needs root. make test installs nothing.

$(K8SBIN)/etcd: go.mod go.sum
	go build -ldflags '-s -w' -o $@ go.etcd.io/etcd/server/v3

# kubectl (for the e2e tier's `kubectl apply`) brings kustomize and more, so it is built from its
# own tools module, at the operator's Kubernetes version.
$(K8SBIN)/kubectl: hack/tools/kubectl/go.mod hack/tools/kubectl/go.sum hack/tools/kubectl/main.go
	cd hack/tools/kubectl && go build -ldflags '$(LDFLAGS)' -o $@ .

# kwok has dependency versions of its own, so it is built from its own tools module.
$(K8SBIN)/kwok: hack/tools/kwok/go.mod hack/tools/kwok/go.sum
	cd hack/tools/kwok && go build -ldflags '-s -w' -o $@ sigs.k8s.io/kwok/cmd/kwok

# Karpenter with its kwok cloud provider (test-autoscaler) has dependency versions of its own, so
# it is built from its own tools module, which pins the release.
$(K8SBIN)/karpenter: hack/tools/karpenter/go.mod hack/tools/karpenter/go.sum
	cd hack/tools/karpenter && go build -ldflags '-s -w' -o $@ sigs.k8s.io/karpenter/kwok

# OLM v0's two operators (olm, catalog) and opm (test-olm) pin Kubernetes and dependency versions of
# their own, so they are built from their own tools module, which pins the releases, in one go build
# (the packages they share compiled once). opm's tags are those of its own build: without
# containers_image_openpgp it needs the gpgme C library (this build has no cgo; a file-based catalog
# needs no SQLite either).
OLM_TOOLS := $(K8SBIN)/olm $(K8SBIN)/catalog $(K8SBIN)/opm
OLM_MODULE := github.com/operator-framework/operator-lifecycle-manager
.PHONY: olm-tools
olm-tools: $(OLM_TOOLS) ## Build OLM's olm and catalog operators and opm into bin/k8s (from hack/tools/olm).

$(OLM_TOOLS) &: hack/tools/olm/go.mod hack/tools/olm/go.sum
	cd hack/tools/olm && go build -tags json1,containers_image_openpgp -ldflags '-s -w' -o $(K8SBIN)/ \
		$(OLM_MODULE)/cmd/olm $(OLM_MODULE)/cmd/catalog github.com/operator-framework/operator-registry/cmd/opm

# The short-lived tools (Helm, promtool: a few commands a run, each over in seconds) are compiled
# without optimization (-N -l) in the packages of theirs that nothing else builds (the modules
# below): a fifth to a quarter less CPU time to compile them (promtool's: 77 and 67 CPU-s instead of
# 103 and 82), in the part of make test that is bound by the CPU. The packages
# they share with the operator or another tool keep the default flags, and so stay shared.
unoptimized = $(foreach p,$(1),-gcflags='$(p)=-N -l')
HELM_OWN := helm.sh/helm/v4/... github.com/tetratelabs/... github.com/ProtonMail/... github.com/cloudflare/circl/... \
	oras.land/oras-go/v2/... github.com/lib/pq/... github.com/ianlancetaylor/demangle/... github.com/fluxcd/cli-utils/... \
	github.com/santhosh-tekuri/jsonschema/v6/... github.com/extism/... github.com/dylibso/... github.com/rubenv/sql-migrate/... \
	github.com/go-gorp/gorp/v3/... github.com/jmoiron/sqlx/... github.com/Masterminds/semver/v3/... \
	github.com/Masterminds/squirrel/... github.com/Masterminds/vcs/...
PROMTOOL_OWN := github.com/prometheus/prometheus/... github.com/prometheus/alertmanager/... github.com/gogo/protobuf/... \
	github.com/aws/... github.com/Azure/... github.com/AzureAD/... cloud.google.com/go/auth/... github.com/google/s2a-go/... \
	google.golang.org/api/... github.com/googleapis/... github.com/alecthomas/... github.com/go-openapi/analysis/... \
	github.com/go-openapi/errors/... github.com/go-openapi/loads/... github.com/go-openapi/spec/... \
	github.com/go-openapi/strfmt/... github.com/go-openapi/validate/...

# Helm reports its release (helm version) only when the build sets it, as Helm's own Makefile does.
.PHONY: helm
helm: $(HELM) ## Build helm into bin/ (from hack/tools/helm).

$(HELM): hack/tools/helm/go.mod hack/tools/helm/go.sum
	cd hack/tools/helm && CGO_ENABLED=0 go build $(call unoptimized,$(HELM_OWN)) -ldflags '-s -w -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)' -o $@ helm.sh/helm/v4/cmd/helm

# Tools carry their version in the file name, so bumping the version installs the new one.
$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

##@ Test

# The tiers of make test, in two lanes that run at the same time, the tiers of each one after
# another: the operator module's tiers, and the tiers of the tools built from modules of their own
# (kubelet, Helm, Karpenter, OLM, promtool), which that lane compiles while the first one runs.
# Much of a tier's time is waiting (for an apiserver, a rollout, a node), so the two share 2 cores;
# the real node, the longest tier, goes first so that its waiting overlaps the other lane's work.
# The install paths (test-bundle) end the first lane: the second, with the real node's tier and
# the later tiers' tools built in it, is the longer one.
TEST_LANE_OPERATOR := test-unit test-html test-example test-integration test-e2e test-example-e2e test-bundle
TEST_LANE_TOOLS := test-node test-autoscaler test-olm test-monitoring

# The binaries tiers of both lanes run, built before the lanes start so that two makes never build
# one file at once (after make demo, only kustomize and the image archive).
.PHONY: test-binaries
test-binaries: k8s-binaries build $(KUSTOMIZE) $(IMAGE_TAR)

# The lanes run by hack/test-tiers.sh, which prints each tier's lane, start and time at the end;
# the first tier that fails stops make test (make -k runs the rest too) and fails it.
.PHONY: test
test: test-binaries ## Run every test tier, in two lanes at once, and print each one's time; installs nothing (the tiers that need make test-deps say so and pass).
	@MAKE="$(MAKE)" NODE_BACKGROUND_BUILD="$(NODE_BACKGROUND_BUILD)" hack/test-tiers.sh $(TEST_LANE_OPERATOR) -- $(TEST_LANE_TOOLS)

# What the tiers after the real node's in lane 2 build (Karpenter, OLM and opm, the previous
# release, promtool): make test passes it to that tier, which builds it while its tests run, at the
# lowest CPU priority, so that the CPU its tests leave while they wait for the node is used and
# the tiers after it start with their tools built. make test-node alone builds none of it.
NODE_BACKGROUND_BUILD_TARGETS := $(K8SBIN)/karpenter $(OLM_TOOLS) previous-release $(PROMTOOL)
test: NODE_BACKGROUND_BUILD = $(NODE_BACKGROUND_BUILD_TARGETS)

# Gates of the tiers that need what make test-deps installs: shell commands that print what is
# missing, nothing when the tier can run. Without it, the tier prints one line and passes.
# hack/maketest sets them on the command line (NODE_UNMET=true) to dry-run either branch.
NODE_UNMET = [ "$$(id -u)" -eq 0 ] || printf ' root'; $(NODE_MISSING)
CHROMIUM_UNMET = ($(CHROMIUM_FOUND)) || printf ' chromium-headless-shell'

.PHONY: test-unit
test-unit: ## Unit tests: builders, rendering, plugins.
	go test $(UNIT_PKGS)

# The browser tier runs when a headless Chromium is installed (make test-deps); else it says so and passes.
.PHONY: test-html
test-html: ## The page of manager simulate -o html in headless Chromium (make test-deps), in a network namespace of its own: no error, no request, one cell per node, moved pods marked, the shading in the screenshot (.cache/test-html).
	@unmet="$$($(CHROMIUM_UNMET))"; if [ -n "$$unmet" ]; then echo "test-html: skipped, no headless Chromium (missing:$$unmet): run make test-deps as root to enable it"; else $(MAKE) test-html-run; fi

.PHONY: test-html-run
test-html-run:
	CHROMIUM_REQUIRED=1 go test ./internal/testutil/chromium -count=1 -v
	CHROMIUM_REQUIRED=1 go test ./pkg/operator/manager -run '^TestSimulateHTMLInChromium$$' -count=1 -v -html-out $(CURDIR)/.cache/test-html

.PHONY: test-example
test-example: build-example bin/manager ## Test the plugin module examples/avoidnodelabels: its plugin, and its binaries against the stock manager.
	cd $(EXAMPLE) && EXAMPLE_BIN_DIR=$(EXAMPLE_BIN) STOCK_MANAGER=$(LOCALBIN)/manager go test $$(go list ./... | grep -v /e2e)

.PHONY: test-example-e2e
test-example-e2e: k8s-binaries build-example ## End to end on the local simulated cluster: the operator with examples/avoidnodelabels' plugin, and its scheduler, keep pods off the labelled nodes.
	cd $(EXAMPLE) && LOCALCLUSTER_BIN_DIR=$(K8SBIN) LOCALCLUSTER_SCHEDULER=$(EXAMPLE_BIN)/kube-scheduler go test ./e2e -count=1 -v -timeout 10m

# Fuzzing past the seed corpora is not a tier of make test: -fuzz compiles the fuzzed package and
# everything it imports again with coverage instrumentation (most of the scheduler, about 11 minutes
# on 2 cores with an empty cache). The seed corpora run in test-unit, as go test runs every Fuzz
# function's seeds. Each run starts from the seed corpus in a corpus directory of its own, so that
# the inputs kept by earlier runs (in the Go cache) do not grow the baseline, and does not minimize
# new inputs: a minimization still running when FUZZTIME ends fails the run ("context deadline
# exceeded").
.PHONY: fuzz
fuzz: ## Fuzz Render and Validate past their seed corpora for a bounded time (FUZZTIME); not part of make test.
	corpus="$$(mktemp -d)"; trap 'rm -rf "$$corpus"' EXIT; \
	go test ./scheduler/profile -run '^$$' -fuzz FuzzRenderValidate -fuzztime $(FUZZTIME) -fuzzminimizetime 0 -test.fuzzcachedir "$$corpus"

# Benchmarks (hack/bench): `make bench` runs them all and prints one table, also written to
# .cache/bench/bench.txt; `make bench-<name>` runs one (table in .cache/bench/<name>.txt). ROUNDS,
# NODES and PODS size them; with the defaults they take about 30 min on 2 cores.
ROUNDS ?= 4
NODES ?= 1000
PODS ?= 5000
BENCH = go run ./hack/bench --assets $(K8SBIN) --scheduler $(LOCALBIN)/kube-scheduler --upstream-scheduler $(LOCALBIN)/kube-scheduler-upstream \
	--noop-scheduler $(LOCALBIN)/kube-scheduler-noop --manager $(LOCALBIN)/manager --rounds $(ROUNDS) --nodes $(NODES) --pods $(PODS) --dir .cache/bench

.PHONY: bench
bench: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd bin/manager bin/kube-scheduler bin/kube-scheduler-upstream bin/kube-scheduler-noop ## Run every benchmark (validate, throughput, simulate, simulate-cli, cycle, operator, preview, preview-large, shared, assign, memory) and print one table.
	$(BENCH) --out .cache/bench/bench.txt

.PHONY: bench-throughput
bench-throughput: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd bin/kube-scheduler bin/kube-scheduler-upstream bin/kube-scheduler-noop ## Pods/s of upstream kube-scheduler, ours, ours with our plugins or two no-op plugins, and the apiserver's ceiling, on NODES fake nodes.
	$(BENCH) --run throughput --out .cache/bench/throughput.txt

.PHONY: bench-simulate
bench-simulate: ## manager simulate's engine: PODS pods on NODES nodes in process, seconds and CPU per pod (the ratio to the scheduler's needs throughput in the same run: make bench).
	$(BENCH) --run simulate --out .cache/bench/simulate.txt

.PHONY: bench-simulate-cli
bench-simulate-cli: bin/manager ## bin/manager simulate of 50,000 pending pods on a snapshot of 5,000 nodes, in a process of its own: seconds, CPU, peak memory.
	$(BENCH) --run simulate-cli --out .cache/bench/simulate-cli.txt

.PHONY: bench-cycle
bench-cycle: ## CPU of the plugins' part of a scheduling cycle: default profile, with our plugins, with two no-op plugins (in process).
	$(BENCH) --run cycle --out .cache/bench/cycle.txt

.PHONY: bench-operator
bench-operator: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd ## The operator with 1000 profiles created at once: time to settle, CPU, writes, reconciles/s, peak memory, writes of a resync.
	$(BENCH) --run operator --out .cache/bench/operator.txt

.PHONY: bench-preview
bench-preview: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd ## The operator's preview of a profile's change, 2000 pods on 1000 nodes: time until status.preview shows it, the operator's memory over idle, its preview worker's peak memory.
	$(BENCH) --run preview --out .cache/bench/preview.txt

.PHONY: bench-preview-large
bench-preview-large: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd ## The operator's preview of a change on 5,000 nodes and 50,000 pods with annotations and env: the operator's peak memory, its preview processes', completed or incomplete.
	$(BENCH) --run preview-large --out .cache/bench/preview-large.txt

.PHONY: bench-shared
bench-shared: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd ## The operator and its webhook with a Scheduler of 50 and of 150 members: time and CPU to serve them all, of one member's change, p50/p99 of a member's dry-run review.
	$(BENCH) --run shared --out .cache/bench/shared.txt

.PHONY: bench-assign
bench-assign: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd ## Pod assignment by the operator's MutatingAdmissionPolicy: p50/p99 of pod creates at 200/s and pods created/s, labelled namespace against unlabelled, with the operator running and stopped.
	$(BENCH) --run assign --out .cache/bench/assign.txt

.PHONY: bench-validate
bench-validate: ## p50/p99 latency of Validate over the golden profiles.
	$(BENCH) --run validate --out .cache/bench/validate.txt

.PHONY: bench-memory
bench-memory: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd bin/kube-scheduler ## Scheduler memory: 1 vs 20 profiles in one process vs 20 processes, on NODES fake nodes.
	$(BENCH) --run memory --out .cache/bench/memory.txt

# Upstream kube-scheduler, built from the same k8s.io/kubernetes module as ours, for
# bench-throughput. Not in bin/k8s, which holds the control plane the tests run.
bin/kube-scheduler-upstream: go.mod go.sum
	CGO_ENABLED=0 go build -ldflags '$(LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-scheduler

# bin/kube-scheduler with two plugins that do nothing, for bench-throughput: what the framework
# charges for two plugins at the extension points of ours. Benchmark code, not in the image.
bin/kube-scheduler-noop: $(GO_SOURCES) go.mod go.sum
	CGO_ENABLED=0 go build -ldflags '$(LDFLAGS)' -o $@ ./hack/bench/noop-scheduler

.PHONY: test-monitoring
test-monitoring: $(PROMTOOL) ## Alerts and dashboard: promtool check rules and test rules (config/prometheus/tests), every query parsed and naming only exported metrics.
	cd hack/tools/promtool && PROMTOOL=$(PROMTOOL) go test $(call unoptimized,$(PROMTOOL_OWN)) ./... -count=1 -v

.PHONY: promtool
promtool: $(PROMTOOL) ## Build promtool into bin/ (from hack/tools/promtool).

# Prometheus' build tag remove_all_sd leaves out the optional service discoveries (cloud SDKs
# and more), which the tests of the rules never use: promtool keeps file, HTTP and Kubernetes
# discovery, and builds in about half the CPU time into a binary about 40% smaller.
$(PROMTOOL): hack/tools/promtool/go.mod hack/tools/promtool/go.sum
	cd hack/tools/promtool && go build -tags remove_all_sd $(call unoptimized,$(PROMTOOL_OWN)) -ldflags '-s -w' -o $@ github.com/prometheus/prometheus/cmd/promtool

.PHONY: test-integration
test-integration: $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd $(K8SBIN)/kube-controller-manager bin/kube-scheduler ## Integration tests on a real kube-apiserver and etcd (envtest), with the real scheduler binary and, for the garbage collector, kube-controller-manager.
	KUBEBUILDER_ASSETS=$(K8SBIN) go test ./test/integration/... -count=1 -v -timeout 20m

.PHONY: test-e2e
test-e2e: k8s-binaries build ## End-to-end tests on a local simulated cluster (etcd, kube-apiserver, kube-controller-manager, kwok) with the operator running.
	LOCALCLUSTER_BIN_DIR=$(K8SBIN) LOCALCLUSTER_SCHEDULER=$(LOCALBIN)/kube-scheduler go test ./test/localcluster/... ./test/e2e/... -skip RealNode -count=1 -v -timeout 20m

# Karpenter's CRDs are read from its module in the Go module cache, at the version that
# hack/tools/karpenter pins.
.PHONY: test-autoscaler
test-autoscaler: k8s-binaries build $(K8SBIN)/karpenter ## Karpenter (kwok provider) beside the local simulated cluster and the operator: the nodes it launches for a NodePool profile's pods, with and without the projection.
	karpenter="$$(cd hack/tools/karpenter && go mod download sigs.k8s.io/karpenter && go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter)"; \
	KARPENTER=$(K8SBIN)/karpenter KARPENTER_CRDS="$$karpenter/kwok/charts/crds:$$karpenter/kwok/apis/crds" \
	LOCALCLUSTER_BIN_DIR=$(K8SBIN) LOCALCLUSTER_SCHEDULER=$(LOCALBIN)/kube-scheduler go test ./test/autoscaler/... -count=1 -v -timeout 15m

# The previous release (PREVIOUS_VERSION), for test-olm's upgrade: its tree at its commit
# (git archive, so this needs a clone with that commit, not a shallow one), its bin/manager and
# bin/kube-scheduler built by its own Makefile, and its bundle as it was released. It is built with
# go.build.mod: its go.mod with the modules the operator now requires at a newer version taken at
# the operator's (hack/followmods; golang.org/x and the like, never its own code), so that the build
# shares the operator's compiled packages (after the operator's last dependency update, 17
# packages of its own instead of 1,040). That make is named, not $(MAKE): make -n
# (hack/maketest's dry run of make test) runs every line with $(MAKE), and this one needs the tree
# the lines before extract.
PREVIOUS_DIR := $(LOCALBIN)/previous/v$(PREVIOUS_VERSION)
.PHONY: previous-release
previous-release: $(PREVIOUS_DIR)/src/bin/manager ## Build the previous release (PREVIOUS_VERSION, from its commit in hack/releases.txt) into bin/previous/v<version>.

$(PREVIOUS_DIR)/src/bin/manager: hack/releases.txt
	@test -n '$(PREVIOUS_COMMIT)' || { echo "hack/releases.txt names no commit of the previous release '$(PREVIOUS_VERSION)'"; exit 1; }
	@git cat-file -e '$(PREVIOUS_COMMIT)^{commit}' 2>/dev/null || { echo "release $(PREVIOUS_VERSION)'s commit $(PREVIOUS_COMMIT) is not in this clone (a shallow clone?): git fetch --unshallow"; exit 1; }
	rm -rf $(PREVIOUS_DIR) && mkdir -p $(PREVIOUS_DIR)/src
	git archive $(PREVIOUS_COMMIT) | tar -x -C $(PREVIOUS_DIR)/src
	cd $(PREVIOUS_DIR)/src && cp go.mod go.build.mod && cp go.sum go.build.sum
	follow="$$(go run ./hack/followmods $(PREVIOUS_DIR)/src/go.mod)"; \
	if [ -n "$$follow" ]; then cd $(PREVIOUS_DIR)/src && go get -modfile=go.build.mod $$follow; fi
	MAKEFLAGS= GOFLAGS=-modfile=go.build.mod make -C $(PREVIOUS_DIR)/src build

# OLM's CRDs are read from its module in the Go module cache, at the version that hack/tools/olm
# pins. Its catalog holds the previous release's bundle and this one, which replaces it
# (hack/catalog, like make catalog's but with both).
OLM_TEST_CATALOG := $(LOCALBIN)/olm-test-catalog/scheduler-profile-operator/catalog.json
.PHONY: test-olm
test-olm: k8s-binaries build $(OLM_TOOLS) previous-release ## The real OLM (v0) beside the local simulated cluster: the catalog served by opm, a Subscription, the CSV Succeeded, the operator as OLM's pod with OLM's webhook configuration and certificate, the uninstall, the upgrade from the previous release.
	go run ./hack/catalog --bundle-dir $(PREVIOUS_DIR)/src/bundle --bundle-dir bundle --out $(OLM_TEST_CATALOG)
	olm="$$(cd hack/tools/olm && go mod download $(OLM_MODULE) && go list -m -f '{{.Dir}}' $(OLM_MODULE))"; \
	OLM_CRDS="$$olm/deploy/chart/crds" OLM_CATALOG=$(OLM_TEST_CATALOG) OLM_PREVIOUS=$(PREVIOUS_DIR) \
	LOCALCLUSTER_BIN_DIR=$(K8SBIN) LOCALCLUSTER_SCHEDULER=$(LOCALBIN)/kube-scheduler go test ./test/olm/... -count=1 -v -timeout 20m

# The real-node tier needs root and Debian's packages of make test-deps: without them, it says so
# and passes before building anything.
NODE_TEST_ENV = IMG=$(IMG) IMAGE_TAR=$(IMAGE_TAR) IMAGE_TOOL=$(IMAGE_TOOL) PAUSE_IMAGE_TAR=$(PAUSE_IMAGE_TAR) PAUSE_IMAGE=$(PAUSE_IMAGE) \
	KUSTOMIZE=$(KUSTOMIZE) HELM=$(HELM) LOCALCLUSTER_BIN_DIR=$(K8SBIN) LOCALCLUSTER_SCHEDULER=$(LOCALBIN)/kube-scheduler
.PHONY: test-node
test-node: ## Real-node tier (root, make test-deps): the operator from make image and make deploy, the Helm chart, the OLM bundle and the release, and its schedulers, as containers on a kubelet node of the local cluster.
	@unmet="$$($(NODE_UNMET))"; if [ -n "$$unmet" ]; then echo "test-node: skipped, the real node needs root and Debian's packages (missing:$$unmet): run make test-deps as root to enable it"; else $(MAKE) test-node-root; fi

.PHONY: test-node-root
# With NODE_BACKGROUND_BUILD (make test sets it), the tier builds those targets with nice -n 19
# while its tests run (output in bin/node-background-build.log) and waits for that build before it
# ends, so that no other make builds one of them at the same time. A failed background build does
# not fail the tier: the tier that needs the target builds it again and shows the error. The make
# is named, not $(MAKE), so that make -n prints the line instead of running it.
test-node-root: k8s-binaries $(K8SBIN)/kubelet $(K8SBIN)/kube-proxy build $(IMAGE_TAR) $(PAUSE_IMAGE_TAR) $(IMAGE_TOOL) $(KUSTOMIZE) $(HELM)
	bg=; if [ -n '$(NODE_BACKGROUND_BUILD)' ]; then \
		echo "test-node: building the later tiers' $(notdir $(NODE_BACKGROUND_BUILD)) with nice -n 19 while the tests run (bin/node-background-build.log)"; \
		MAKEFLAGS= nice -n 19 make --no-print-directory $(NODE_BACKGROUND_BUILD) >$(LOCALBIN)/node-background-build.log 2>&1 & bg=$$!; \
	fi; \
	rc=0; $(NODE_TEST_ENV) go test ./test/localcluster -run RealNode -count=1 -v -timeout 10m || rc=$$?; \
	if [ $$rc -eq 0 ]; then $(NODE_TEST_ENV) go test ./test/node -count=1 -v -timeout 30m || rc=$$?; fi; \
	if [ -n "$$bg" ]; then \
		start=$$(date +%s); if wait $$bg; then echo "test-node: the later tiers' tools built (waited $$(( $$(date +%s) - start )) s for the build after the tests)"; \
		else echo "test-node: building the later tiers' tools failed; their tiers build them again:"; tail -n 20 $(LOCALBIN)/node-background-build.log; fi; \
	fi; \
	exit $$rc

##@ Deployment, image and OLM bundle

# Builds the kustomization $(1) with the operator image set to $(2) (RELATED_IMAGE_SCHEDULER
# follows it) through a throwaway overlay under bin/, so that no tracked file is edited.
define kustomize-build
mkdir -p $(LOCALBIN); overlay="$$(mktemp -d $(LOCALBIN)/overlay.XXXXXX)"; trap 'rm -rf "$$overlay"' EXIT; \
	(cd "$$overlay" && $(KUSTOMIZE) create --resources ../../$(1) && $(KUSTOMIZE) edit set image scheduler-profile-operator=$(2)) && \
	$(KUSTOMIZE) build "$$overlay"
endef

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Build kustomize into bin/ (from hack/tools/kustomize).

$(KUSTOMIZE): hack/tools/kustomize/go.mod hack/tools/kustomize/go.sum
	cd hack/tools/kustomize && go build -ldflags '-s -w' -o $@ sigs.k8s.io/kustomize/kustomize/v5

# make deploy returns once the operator serves: its Deployment (config/default's name prefix and
# namespace) available and its webhook answering a server-side dry run of DEPLOY_CHECK_PROFILE,
# within DEPLOY_TIMEOUT seconds (hack/deploy-wait.sh).
DEPLOY_NAMESPACE := $(shell awk '$$1 == "namespace:" { print $$2; exit }' config/default/namespace.yaml)
OPERATOR_DEPLOYMENT := scheduler-profile-operator-controller-manager
DEPLOY_CHECK_PROFILE := config/samples/scheduling_v1alpha1_schedulerprofile_binpack.yaml
DEPLOY_TIMEOUT ?= 300

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Install the operator (CRD, RBAC, Deployment, webhook) running image IMG into the cluster of the current kubeconfig, and wait until it is available and its webhook answers (DEPLOY_TIMEOUT seconds).
	$(call kustomize-build,config/default,$(IMG)) | kubectl apply --server-side -f -
	hack/deploy-wait.sh $(DEPLOY_NAMESPACE) $(OPERATOR_DEPLOYMENT) $(DEPLOY_CHECK_PROFILE) $(DEPLOY_TIMEOUT)

.PHONY: undeploy
undeploy: $(KUSTOMIZE) ## Remove the operator, its namespace and its CRD (and with it every SchedulerProfile).
	$(call kustomize-build,config/default,$(IMG)) | kubectl delete --ignore-not-found -f -

.PHONY: bundle
bundle: manifests $(KUSTOMIZE) ## Generate the OLM bundle (bundle/, bundle.Dockerfile) for VERSION and IMG, and the monitoring objects the bundle's operator applies itself (controllers/monitoring/objects.yaml).
	$(call kustomize-build,config/manifests,$(BUNDLE_OPERATOR_IMG)) | go run ./hack/bundle --version $(VERSION) --replaces '$(PREVIOUS_VERSION)' \
		--channels $(CHANNELS) --default-channel $(DEFAULT_CHANNEL) --bundle-dir bundle --dockerfile bundle.Dockerfile
	$(KUSTOMIZE) build config/manifests/monitoring > controllers/monitoring/objects.yaml

# The file-based catalog of the bundle (hack/catalog): the package, its channels and the bundle
# with its manifests inline, which OLM installs from a CatalogSource with no bundle image. CATALOG
# is its file; its directory is what `opm serve` serves. It is made from bundle/ as it is (make
# bundle writes it, make verify keeps it current); make release writes one beside install.yaml.
CATALOG ?= $(LOCALBIN)/olm-catalog/scheduler-profile-operator/catalog.json
.PHONY: catalog
catalog: ## Generate the file-based OLM catalog of bundle/ into CATALOG (bin/olm-catalog/scheduler-profile-operator/catalog.json).
	go run ./hack/catalog --bundle-dir bundle --out $(CATALOG)

# The Helm chart: config/default as kustomize builds it, made into templates by hack/chart (the
# namespace is the release's; image, replicas, resources, the webhook and the flags are values),
# for VERSION and the release image of VERSION, as make bundle names it. make release packages it
# again with the image pinned by digest.
CHART_DIR := charts/scheduler-profile-operator
CHART = go run ./hack/chart --version $(VERSION) --kube-version $(K8S_MAJOR).$(K8S_MINOR)

.PHONY: chart
chart: manifests $(KUSTOMIZE) ## Generate the Helm chart (charts/scheduler-profile-operator) from config/default for VERSION.
	$(KUSTOMIZE) build config/default | $(CHART) --image $(BUNDLE_OPERATOR_IMG) --out $(CHART_DIR)

# make image: the same image as the Dockerfile's (both binaries, nonroot, /manager as entrypoint,
# its labels) built without a container engine by hack/tools/image (go-containerregistry), as a
# tarball for `ctr images import`, `docker load` or `podman load`. test/bundle checks that it and the
# Dockerfile describe the same image.

$(IMAGE_TOOL): hack/tools/image/go.mod hack/tools/image/go.sum hack/tools/image/main.go
	cd hack/tools/image && go build -o $@ .

.PHONY: image
image: $(IMAGE_TAR) ## Build the image IMG as a tarball (IMAGE_TAR) without a container engine.

# The binaries of the image: a plugin module's pair instead with `make image-example`.
MANAGER_BIN ?= bin/manager
SCHEDULER_BIN ?= bin/kube-scheduler

# The tag and the binaries are part of the tarball: a stamp that changes with IMG (or with the
# binaries' paths) rebuilds it for another IMG.
IMAGE_TAG_STAMP := $(IMAGE_TAR).tag
.PHONY: FORCE
$(IMAGE_TAG_STAMP): FORCE
	@mkdir -p $(dir $@); [ "$$(cat $@ 2>/dev/null)" = "$(IMG) $(MANAGER_BIN) $(SCHEDULER_BIN)" ] || echo "$(IMG) $(MANAGER_BIN) $(SCHEDULER_BIN)" > $@

$(IMAGE_TAR): $(MANAGER_BIN) $(SCHEDULER_BIN) $(IMAGE_TOOL) $(IMAGE_TAG_STAMP)
	$(IMAGE_TOOL) --output $@ --tag $(IMG) --user 65532:65532 --entrypoint /manager \
		$(foreach l,$(IMAGE_LABELS),--label $(l)) --file /manager=$(MANAGER_BIN) --file /kube-scheduler=$(SCHEDULER_BIN)

.PHONY: image-example
image-example: build-example ## Build the image EXAMPLE_IMG of examples/avoidnodelabels' manager and scheduler as a tarball (bin/examples/avoidnodelabels/image.tar).
	$(MAKE) image IMG=$(EXAMPLE_IMG) IMAGE_TAR=$(EXAMPLE_BIN)/image.tar MANAGER_BIN=$(EXAMPLE_BIN)/manager SCHEDULER_BIN=$(EXAMPLE_BIN)/kube-scheduler

$(PAUSE_IMAGE_TAR): hack/tools/image/pause/main.go $(IMAGE_TOOL)
	cd hack/tools/image && CGO_ENABLED=0 go build -ldflags '-s -w' -o $(LOCALBIN)/pause ./pause
	$(IMAGE_TOOL) --output $@ --tag $(PAUSE_IMAGE) --user 65535:65535 --entrypoint /pause --file /pause=$(LOCALBIN)/pause

# make release: what a release publishes, in DIST, from the tree as it is (run make verify first).
# The image of make image, repacked by hack/release as an archive that is also an OCI image layout,
# so that loading it (kind load image-archive, ctr images import) keeps its manifest digest;
# install.yaml, config/default built as make deploy builds it, with the image IMG@<that digest>
# (RELATED_IMAGE_SCHEDULER follows it); the OLM bundle of config/manifests pinned the same, as a
# tarball, and its file-based catalog (hack/catalog); the Helm chart of make chart with that image
# as its default, packaged by helm; SHA256SUMS. hack/release seal fails unless every image they
# name (the chart's as helm template renders it) is that one. Without IMG on the command line, the
# release names the release image of VERSION, as make bundle does.
DIST ?= dist
RELEASE_IMG = $(BUNDLE_OPERATOR_IMG)
RELEASE_IMAGE_TAR := scheduler-profile-operator-image.tar
RELEASE_BUNDLE := scheduler-profile-operator-bundle
RELEASE_CATALOG := scheduler-profile-operator-catalog.json

.PHONY: release
release: $(KUSTOMIZE) $(IMAGE_TAR) $(HELM) ## Write the release of VERSION and IMG (default: the release image of VERSION) into DIST (dist/): install.yaml, the OLM bundle and its catalog and the Helm chart with the image pinned by digest, the image tarball, SHA256SUMS.
	rm -rf $(DIST) && mkdir -p $(DIST)
	chart="$$(mktemp -d $(LOCALBIN)/chart.XXXXXX)"; trap 'rm -rf "$$chart"' EXIT; \
	ref="$$(go run ./hack/release image --from $(IMAGE_TAR) --tag $(RELEASE_IMG) --out $(DIST)/$(RELEASE_IMAGE_TAR))"; \
	($(call kustomize-build,config/default,$$ref)) > $(DIST)/install.yaml; \
	($(call kustomize-build,config/manifests,$$ref)) | go run ./hack/bundle --version $(VERSION) --replaces '$(PREVIOUS_VERSION)' --channels $(CHANNELS) \
		--default-channel $(DEFAULT_CHANNEL) --bundle-dir $(DIST)/$(RELEASE_BUNDLE)/bundle --dockerfile $(DIST)/$(RELEASE_BUNDLE)/bundle.Dockerfile; \
	go run ./hack/catalog --bundle-dir $(DIST)/$(RELEASE_BUNDLE)/bundle --out $(DIST)/$(RELEASE_CATALOG); \
	$(KUSTOMIZE) build config/default | $(CHART) --image "$$ref" --out "$$chart/$(notdir $(CHART_DIR))"; \
	$(HELM) package "$$chart/$(notdir $(CHART_DIR))" --destination $(DIST) >/dev/null; \
	$(HELM) template $(notdir $(CHART_DIR)) $(DIST)/$(notdir $(CHART_DIR))-$(VERSION).tgz > "$$chart/rendered.yaml"; \
	go run ./hack/release seal --dir $(DIST) --image $(RELEASE_IMAGE_TAR) --bundle $(RELEASE_BUNDLE) --chart-rendered "$$chart/rendered.yaml"
	cat $(DIST)/SHA256SUMS

.PHONY: docker-build
docker-build: ## Build the image IMG (the operator and the scheduler) with CONTAINER_TOOL.
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the image IMG.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: bundle-build
bundle-build: ## Build the bundle image BUNDLE_IMG.
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image BUNDLE_IMG.
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)

.PHONY: test-bundle
test-bundle: $(KUSTOMIZE) $(K8SBIN)/kube-apiserver $(K8SBIN)/etcd build $(IMAGE_TAR) ## Install paths: OLM validation of bundle/, kustomize output on envtest, the OLM install simulated, the image (make image) against the Dockerfile.
	KUSTOMIZE=$(KUSTOMIZE) KUBEBUILDER_ASSETS=$(K8SBIN) go test ./test/bundle/... -count=1 -v -timeout 20m

##@ Demo

DEMO_DIR ?= $(CURDIR)/.cache/demo
# NODE=real runs the operator and its schedulers as containers on a real node (kubelet, containerd;
# needs root), installed with `make deploy IMG=...`; the default, kwok, runs them as local processes.
NODE ?= kwok
DEMO_DEPS := k8s-binaries build bin/demo
DEMO_FLAGS :=
ifeq ($(NODE),real)
DEMO_DEPS += node-deps $(K8SBIN)/kubelet $(K8SBIN)/kube-proxy $(IMAGE_TAR) $(PAUSE_IMAGE_TAR) $(KUSTOMIZE)
DEMO_FLAGS += --real-node --img $(IMG) --image-tar $(IMAGE_TAR) --pause-image-tar $(PAUSE_IMAGE_TAR) --pause-image $(PAUSE_IMAGE)
endif

bin/demo: $(GO_SOURCES) go.mod go.sum
	go build -o $@ ./hack/demo

.PHONY: demo
demo: $(DEMO_DEPS) ## Run the operator on a local simulated cluster with the samples and print where their pods landed (NODE=real: on a real node, as root).
	LOCALCLUSTER_BIN_DIR=$(K8SBIN) LOCALCLUSTER_SCHEDULER=$(LOCALBIN)/kube-scheduler bin/demo start --dir $(DEMO_DIR) $(DEMO_FLAGS)

.PHONY: demo-stop
demo-stop: bin/demo ## Stop exactly what make demo started.
	bin/demo stop --dir $(DEMO_DIR)
