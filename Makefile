# cairn — build and test. `make test` runs every test; CI runs exactly that.
#
# The tests come in three tiers (docs/testing.md "Tiers"), each one
# command; `make test` runs them all, with the checks beside them:
#   make check             gofmt, vet, `go test -short ./...`: pure code, the
#                          fuzzers' seeds, tests against a control plane
#   make test-integration  every test but the real-node ones: real PostgreSQL
#                          15 (13 too for the tests marked per major), etcd
#   make test-e2e          the real-node walkthroughs (TestRealNode*), in
#                          E2E_SHARDS processes side by side

GO       ?= go
FUZZTIME ?= 20s
PKGS     := ./...
# The packages with tests marked testbed.PerMajor: test-integration runs
# them on PostgreSQL 15, then those tests again on 13.
PG_PKGS  := ./runtime/instance/postgres ./runtime/backup ./runtime/agent/postgres
# How many real-node tests run side by side (each takes a node slot,
# about 2 GiB and, in its busiest minute, most of a core).
E2E_SHARDS ?= 2

.PHONY: release-snapshot release-host release-check all build test check test-integration test-e2e vet fmt-check race fuzz bench bench-fleet generate clean testbin testbin-kube testbin-pg13 testbin-crds testbin-node testbin-argocd image image-test

all: build

# A build from a checkout names its commit and the commit's date (cairn
# version); a release build stamps the release too (.goreleaser.yaml).
VERSION_PKG := github.com/cairn-dev/cairn/version
build:
	$(GO) build -ldflags "-X $(VERSION_PKG).Commit=$$(git rev-parse HEAD) -X $(VERSION_PKG).Date=$$(git log -1 --format=%cI)" -o bin/cairn ./cmd/cairn

## release-snapshot: what the release workflow (.github/workflows/release.yaml)
## builds, locally and offline, published nowhere: GoReleaser (pinned in
## .ci/goreleaser, built once through the Go module proxy) in snapshot mode
## builds cairn for linux/darwin x amd64/arm64 into dist/, with archives and
## checksums.txt, then .ci/release/check checks them (a binary per
## platform, checksums that match, `cairn version -o json` naming the
## snapshot and this commit). Skipped here, done by the workflow: sbom
## (syft is not on this machine; the workflow installs it), sign (cosign
## needs the network and an OIDC identity) and docker (no Docker engine:
## `make image` builds the images here). About 10 minutes on 2 busy cores
## the first time (three cross builds), seconds when cached.
GORELEASER := .cache/bin/goreleaser
release-snapshot: $(GORELEASER)
	CAIRN_COMMIT=$$(git rev-parse HEAD) CAIRN_DATE=$$(git log -1 --format=%cI) CAIRN_TIMESTAMP=$$(git log -1 --format=%ct) \
		$(GORELEASER) release --snapshot --clean --skip=sbom,sign,docker
	.ci/release/check dist

## release-host: the part of release-snapshot `make test` runs: GoReleaser's
## config checked and its build for this machine's platform only, with
## the same flags and stamps, and that binary's `cairn version -o json`
## checked. The three cross builds (archives and checksums too) are
## release-snapshot's: on a fresh 2-core machine they would add about a
## quarter of an hour to CI.
release-host: $(GORELEASER)
	$(GORELEASER) check
	CAIRN_COMMIT=$$(git rev-parse HEAD) CAIRN_DATE=$$(git log -1 --format=%cI) CAIRN_TIMESTAMP=$$(git log -1 --format=%ct) \
		$(GORELEASER) build --snapshot --clean --single-target
	.ci/release/check --host dist

## release-check: check what the last release-snapshot left in dist/.
release-check:
	.ci/release/check dist

.cache/bin/goreleaser: .ci/goreleaser/go.mod .ci/goreleaser/go.sum
	cd .ci/goreleaser && GOFLAGS=-mod=mod nice -n 10 $(GO) build -o ../../$@ github.com/goreleaser/goreleaser/v2

## test: every tier and every check CI makes. The critical path is the
## integration tier, then the e2e tier (its shards side by side); the
## rest runs in the background at nice 19, one chain: first what only the
## e2e tier needs (test-e2e-programs: the real node's programs, Argo CD,
## the images), built beside the integration tier, on the cores it leaves
## idle while it waits on failover timers and leases; then, beside the e2e
## tier, the checks nothing waits for (test-background: vet, promtool and
## helm with the alert rules, the chart and the two packages that run
## them, the race detector, a bounded fuzz run, the image tool's tests,
## GoReleaser's build). The e2e tier starts as soon as the integration
## tier has passed and its programs are built. The two tiers run one
## after the other: side by side, with the e2e tier's two shards, they put
## four busy processes on two cores, and a real node's etcd scale-in
## outlasted its wait under that load. The background's output follows
## the e2e tier's; each part's time is printed ("test: ... took").
BG_LOG := .cache/logs/test-background.log
E2E_PROGRAMS_RC := .cache/logs/test-e2e-programs.rc
# What the integration tier needs built before it starts.
INTEGRATION_BINS := testbin testbin-kube testbin-pg13 testbin-crds
# The packages whose tests run promtool and helm: `make test` runs them in
# the background (test-late-pkgs), after those two are built, so that
# their builds (about 6 minutes on a fresh machine) are off the path.
LATE_PKGS := ./deploy/monitoring ./deploy/reconcile
test: fmt-check $(INTEGRATION_BINS)
	@mkdir -p .cache/logs && rm -f $(E2E_PROGRAMS_RC)
	@echo "test: the integration tier's programs are built ($$(date -u +%T)); the background part's output follows the e2e tier's"
	@pkgs=$$($(GO) list $(PKGS) | grep -vxF "$$($(GO) list $(LATE_PKGS))" | tr '\n' ' '); \
	if [ -z "$$(echo $$pkgs)" ]; then echo "test: go list found no package for the integration tier"; exit 1; fi; \
	start=$$(date +%s); \
	( bgstart=$$(date +%s); nice -n 19 $(MAKE) --no-print-directory test-e2e-programs; rc=$$?; echo $$rc > $(E2E_PROGRAMS_RC); \
	  echo "test: the e2e tier's programs and images took $$(( $$(date +%s) - bgstart )) s (status $$rc)"; \
	  nice -n 19 $(MAKE) --no-print-directory test-background; brc=$$?; \
	  echo "test: the background part took $$(( $$(date +%s) - bgstart )) s (status $$brc)"; \
	  [ $$rc -eq 0 ] && [ $$brc -eq 0 ] ) >$(BG_LOG) 2>&1 & bg=$$!; \
	$(MAKE) --no-print-directory test-integration INTEGRATION_PKGS="$$pkgs" INTEGRATION_TOOLS=; integ=$$?; \
	echo "test: test-integration took $$(( $$(date +%s) - start )) s (status $$integ)"; \
	while [ ! -s $(E2E_PROGRAMS_RC) ] && kill -0 $$bg 2>/dev/null; do sleep 2; done; \
	programs=$$(cat $(E2E_PROGRAMS_RC) 2>/dev/null || echo 1); e2e=1; \
	if [ $$integ -eq 0 ] && [ $$programs -eq 0 ]; then \
	  e2estart=$$(date +%s); echo "test: test-e2e starts ($$(date -u +%T))"; \
	  $(MAKE) --no-print-directory test-e2e; e2e=$$?; \
	  echo "test: test-e2e took $$(( $$(date +%s) - e2estart )) s (status $$e2e)"; \
	else echo "test: test-e2e does not run: test-integration $$integ, the e2e tier's programs $$programs"; fi; \
	wait $$bg; bgrc=$$?; \
	echo "test: the background part's output"; cat $(BG_LOG); \
	echo "test: took $$(( $$(date +%s) - start )) s after the integration tier's programs were built"; \
	if [ $$integ -ne 0 ] || [ $$e2e -ne 0 ] || [ $$bgrc -ne 0 ]; then \
	  echo "test failed: test-integration $$integ, test-e2e $$e2e, the background part $$bgrc"; exit 1; fi

## test-e2e-programs: what only the e2e tier needs built: the real
## node's programs (with Argo CD's), the images and helm (the real-node
## install runs the chart).
.PHONY: test-e2e-programs
test-e2e-programs: testbin-node image .cache/bin/helm

## test-background: the checks `make test` runs beside the e2e tier: vet,
## the alert rules and the chart with their Go packages (LATE_PKGS), the
## race detector, the bounded fuzz runs, the image tool's tests and
## release-host.
.PHONY: test-background test-late-pkgs
test-background: vet test-late-pkgs race fuzz image-test release-host

test-late-pkgs: monitoring chart testbin-kube testbin-crds
	GO=$(GO) .ci/gotest -count=1 -skip '^TestRealNode' $(LATE_PKGS)

## check: the inner loop, a few minutes once the control plane is built:
## gofmt, vet and `go test -short ./...`, which runs every pure test, the
## fuzzers' seed corpora and the tests that need only a control plane;
## a test that needs a database member or a real node skips, naming the
## target that runs it. On a machine with only Go it skips what needs a
## program not built (testbed.Missing) and passes.
check: fmt-check vet testbin testbin-kube testbin-crds .cache/bin/promtool
	GO=$(GO) .ci/gotest -short -count=1 $(PKGS)

## test-integration: every test but the real-node ones: the check tier's
## and those with real PostgreSQL (15) and etcd (3.4-3.7) members, and,
## side by side with them, the tests marked per major (testbed.PerMajor)
## once more on PostgreSQL 13. The PostgreSQL 13 pass mostly waits
## (failover timers, leases), so beside the main pass it costs little of
## its CPU; its test binaries are built first, so the two passes never
## compile the same packages at once. Its output follows the main pass's.
## The main pass runs INTEGRATION_P packages at once (go test -p): its
## packages mostly wait on servers, timers and leases, and cmd/cairn alone
## takes about 12 of its minutes, so two at a time leave the cores idle.
## INTEGRATION_PKGS narrows the main pass and INTEGRATION_TOOLS what it
## needs built besides INTEGRATION_BINS: `make test` leaves LATE_PKGS, and
## promtool and helm, to its background part.
PG13_OUT := .cache/logs/integration-pg13.out
INTEGRATION_P ?= 3
INTEGRATION_PKGS ?= $(PKGS)
INTEGRATION_TOOLS ?= .cache/bin/promtool .cache/bin/helm
test-integration: $(INTEGRATION_BINS) $(INTEGRATION_TOOLS)
	@mkdir -p .cache/logs
	$(GO) test -count=1 -run '^$$' $(PG_PKGS) >/dev/null
	@echo "test-integration: the tests marked per major on PostgreSQL 13, side by side (output at the end)"
	@CAIRN_PG_BIN=$(CURDIR)/.cache/pg13/bin GO=$(GO) .ci/gotest -count=1 -timeout 40m -skip '^TestRealNode' $(PG_PKGS) >$(PG13_OUT) 2>&1 & pg13=$$!; \
	GO=$(GO) .ci/gotest -count=1 -p $(INTEGRATION_P) -timeout 40m -skip '^TestRealNode' $(INTEGRATION_PKGS); main=$$?; \
	wait $$pg13; minor=$$?; \
	echo "test-integration: the PostgreSQL 13 pass"; cat $(PG13_OUT); \
	if [ $$main -ne 0 ] || [ $$minor -ne 0 ]; then echo "test-integration failed: PostgreSQL 15 pass $$main, PostgreSQL 13 pass $$minor"; exit 1; fi

## test-e2e: the real-node walkthroughs (TestRealNode*: kubelet,
## containerd, Flux, the images `make image` builds), dealt into
## E2E_SHARDS processes that run side by side (.ci/e2e).
test-e2e: testbin testbin-kube testbin-pg13 testbin-crds testbin-node image .cache/bin/helm
	GO=$(GO) E2E_SHARDS=$(E2E_SHARDS) .ci/e2e

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## race: what runs side by side, under the race detector: renders from a
## cold start (kustomize builds share no lock, renderer/build.go) and the
## pass's render-ahead (publish/ahead.go).
race:
	$(GO) test -race -count=1 -run '^TestRenderConcurrently$$' ./renderer
	$(GO) test -race -count=1 -run '^TestAhead' ./publish

## testbin: the real etcd servers the tests run: 3.7.3, and 3.6.16 and
## 3.5.35 for the upgrade walkthrough and chain, built through the Go module
## proxy (under a minute each); 3.4.23 from Debian 12's etcd-server package
## (.ci/fetch-etcd34: apt-get download and dpkg -x, never installed).
testbin: .cache/bin/etcd .cache/bin/etcd-3.6 .cache/bin/etcd-3.5 .cache/bin/etcd-3.4

.cache/bin/etcd: .ci/etcd/go.mod .ci/etcd/go.sum .ci/etcd/main.go
	cd .ci/etcd && $(GO) build -o ../../.cache/bin/etcd .

.cache/bin/etcd-3.6: .ci/etcd36/go.mod .ci/etcd36/go.sum .ci/etcd36/main.go
	cd .ci/etcd36 && $(GO) build -o ../../.cache/bin/etcd-3.6 .

.cache/bin/etcd-3.5: .ci/etcd35/go.mod .ci/etcd35/go.sum .ci/etcd35/main.go
	cd .ci/etcd35 && $(GO) build -o ../../.cache/bin/etcd-3.5 .

.cache/bin/etcd-3.4: .ci/fetch-etcd34
	.ci/fetch-etcd34

## fuzz: short, bounded runs of the spec decoder, postgresql.conf writer
## (checked by PostgreSQL 15's postgres -C when it is installed) and policy
## loader fuzzers.
fuzz:
	$(GO) test ./planner/spec -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./planner/spec -run '^$$' -fuzz '^FuzzPostgresConf$$' -fuzztime 5s -fuzzminimizetime 2s
	$(GO) test ./policies -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 10s -fuzzminimizetime 5s

## bench: planning and rendering (with kustomize builds) 1,000 mixed clusters,
## and the fleet benchmark (docs/testing.md): cairn's loop over 100 and 1,000
## generated clusters on a real git server, local and GitHub pull requests;
## CAIRN_BENCH_FLEET=10000 adds 10,000.
## bench-fleet: cairn's commands over 1,000 generated clusters, each a process
## as a user runs it, beside the kustomize CLI once per rendered entry point
## (docs/scale.md); CAIRN_BENCH_FLEET sets the fleet's size.
bench-fleet: .cache/bin/kustomize
	$(GO) build -o .cache/bin/cairn-bench ./cmd/cairn
	CAIRN_BENCH_BIN=$(CURDIR)/.cache/bin/cairn-bench CAIRN_BENCH_KUSTOMIZE=$(CURDIR)/.cache/bin/kustomize \
		$(GO) test ./cmd/cairn -run '^$$' -bench '^BenchmarkCLIFleet$$' -benchtime 1x -timeout 0

# The kustomize CLI the fleet benchmark compares with, pinned.
KUSTOMIZE_VERSION := v5.8.1
.cache/bin/kustomize:
	GOBIN=$(CURDIR)/.cache/bin $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

bench:
	$(GO) test ./planner -run '^$$' -bench . -benchmem
	$(GO) test ./renderer -run '^$$' -bench . -benchmem -benchtime 1x
	$(GO) test ./policies -run '^$$' -bench . -benchmem
	$(GO) test ./cmd/cairn -run '^$$' -bench '^BenchmarkFleet' -benchtime 1x -timeout 0

## generate: rewrite generated files (JSON Schemas, reference page, golden outputs).
generate:
	$(GO) test ./planner/spec -run TestGenerated -update
	$(GO) test ./cmd/cairn -update
	$(GO) test ./renderer -update

clean:
	rm -rf bin .cache

## testbin-pg13: PostgreSQL 13 from Debian 11's packages, unpacked into
## .cache/pg13 beside the system's PostgreSQL 15 (see .ci/fetch-pg13).
testbin-pg13: .cache/pg13/bin/postgres

.cache/pg13/bin/postgres: .ci/fetch-pg13
	.ci/fetch-pg13

## testbin-crds: the Prometheus Operator's PodMonitor and PrometheusRule
## CRDs, from its module (pinned) through the Go module proxy, so that the
## rendered PodMonitor and deploy/monitoring's PrometheusRule are checked
## by a real kube-apiserver.
PROM_OPERATOR := v0.88.0
CRDS := .cache/crds/monitoring.coreos.com_podmonitors.yaml .cache/crds/monitoring.coreos.com_prometheusrules.yaml
CERT_MANAGER := v1.16.2
CERT_MANAGER_CRD := .cache/crds/cert-manager.io_certificates.yaml
testbin-crds: $(CRDS) $(CERT_MANAGER_CRD)

$(CRDS): Makefile
	mkdir -p .cache/crds
	dir=$$(cd "$$(mktemp -d)" && GOFLAGS= $(GO) mod download -json github.com/prometheus-operator/prometheus-operator@$(PROM_OPERATOR) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	test -n "$$dir" && install -m 0644 "$$dir/example/prometheus-operator-crd/$(notdir $@)" $@

## cert-manager's Certificate CRD, from its module (pinned), so that the
## Certificates rendered for spec.tls.issuerRef are checked by a real
## kube-apiserver; the Helm chart's label lines (templates, not label
## values) are left out.
$(CERT_MANAGER_CRD): Makefile
	mkdir -p .cache/crds
	dir=$$(cd "$$(mktemp -d)" && GOFLAGS= $(GO) mod download -json github.com/cert-manager/cert-manager@$(CERT_MANAGER) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	test -n "$$dir" && sed -e '/^  labels:$$/d' -e "/: '{{/d" "$$dir/deploy/crds/crd-certificates.yaml" > $@.tmp && mv $@.tmp $@

## testbin-kube: kube-apiserver and kube-controller-manager built from
## k8s.io/kubernetes through the Go module proxy (about 8 minutes on 2 cores
## the first time, cached after; the second binary links in seconds once
## the first is built).
testbin-kube: .cache/bin/kube-apiserver .cache/bin/kube-controller-manager

.cache/bin/kube-apiserver: .ci/kube/go.mod .ci/kube/go.sum
	cd .ci/kube && $(GO) build -o ../../.cache/bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver

.cache/bin/kube-controller-manager: .ci/kube/go.mod .ci/kube/go.sum
	cd .ci/kube && $(GO) build -o ../../.cache/bin/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager

## testbin-node: what a real node runs (testbed/kubenode): kubelet,
## kube-proxy and kube-scheduler from the same k8s.io/kubernetes module as
## the control plane (about a minute once it is built); CoreDNS with the
## plugins a test cluster's DNS uses (.ci/coredns, about a minute); Flux's
## source-controller and kustomize-controller v1.9.6 (.ci/flux) and their
## CRDs from the same modules. containerd, runc, the CNI plugins and
## iptables come from Debian's packages (.ci/run installs them).
FLUX_CRDS := .cache/crds/flux/.v1.9.6
testbin-node: .cache/bin/kubelet .cache/bin/kube-proxy .cache/bin/kube-scheduler .cache/bin/coredns \
	.cache/bin/source-controller .cache/bin/kustomize-controller $(FLUX_CRDS) testbin-argocd

.cache/bin/kubelet .cache/bin/kube-proxy .cache/bin/kube-scheduler: .ci/kube/go.mod .ci/kube/go.sum
	cd .ci/kube && $(GO) build -o ../../$@ k8s.io/kubernetes/cmd/$(notdir $@)

.cache/bin/coredns: .ci/coredns/go.mod .ci/coredns/go.sum .ci/coredns/main.go
	cd .ci/coredns && $(GO) build -o ../../$@ .

.cache/bin/source-controller .cache/bin/kustomize-controller: .ci/flux/go.mod .ci/flux/go.sum
	cd .ci/flux && $(GO) build -o ../../$@ github.com/fluxcd/$(notdir $@)

## Every CRD of both controllers: kustomize-controller watches every
## source kind, so all must be served.
$(FLUX_CRDS): .ci/flux/go.mod
	rm -rf .cache/crds/flux && mkdir -p .cache/crds/flux
	for c in source kustomize; do \
		dir=$$(cd .ci/flux && $(GO) list -m -f '{{.Dir}}' github.com/fluxcd/$$c-controller) && test -n "$$dir" && \
		install -m 0644 "$$dir"/config/crd/bases/*.yaml .cache/crds/flux/ || exit 1; \
	done
	touch $@

## testbin-argocd: Argo CD v3.2.6 (.ci/argocd), the other sync engine the
## real-node walkthroughs run under (testbed/argobed): its one binary,
## which runs application-controller, repo-server or
## applicationset-controller by the name it is started as, built through
## the Go module proxy (about 10 minutes on 2 cores the first time, cached
## after), and its CRDs from the same module; the kustomize CLI its
## repo-server runs (pinned, .cache/bin/kustomize). Redis is Debian's
## redis-server (.ci/run installs it).
ARGOCD_CRDS := .cache/crds/argocd/.v3.2.6
testbin-argocd: .cache/bin/argocd $(ARGOCD_CRDS) .cache/bin/kustomize

.cache/bin/argocd: .ci/argocd/go.mod .ci/argocd/go.sum
	cd .ci/argocd && $(GO) build -o ../../$@ github.com/argoproj/argo-cd/v3/cmd

$(ARGOCD_CRDS): .ci/argocd/go.mod
	rm -rf .cache/crds/argocd && mkdir -p .cache/crds/argocd
	dir=$$(cd .ci/argocd && $(GO) list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3) && test -n "$$dir" && \
		install -m 0644 "$$dir"/manifests/crds/*-crd.yaml .cache/crds/argocd/
	touch $@

## monitoring: the alert rules (deploy/monitoring) pass promtool's checks and
## their unit tests, and the Go test checks the dashboard's queries with it.
## promtool 3.16.0 (github.com/prometheus/prometheus v0.316.0, pinned in
## .ci/promtool) is built through the Go module proxy the first time (about
## 7 minutes on 2 busy cores).
.PHONY: monitoring
monitoring: .cache/bin/promtool
	.cache/bin/promtool check rules deploy/monitoring/rules.yaml
	cd deploy/monitoring && ../../.cache/bin/promtool test rules rules_test.yaml

.cache/bin/promtool: .ci/promtool/go.mod .ci/promtool/go.sum
	cd .ci/promtool && $(GO) build -ldflags '-X github.com/prometheus/common/version.Version=3.16.0' -o ../../.cache/bin/promtool github.com/prometheus/prometheus/cmd/promtool

## chart: `helm lint` and `helm template` on charts/cairn, with the
## values examples/install sets (charts/cairn/ci); the Go tests of
## deploy/reconcile hold its objects equal to examples/install's and dry
## run them on a real kube-apiserver. helm v4.3.2 (pinned in .ci/helm) is
## built through the Go module proxy the first time (a few minutes).
.PHONY: chart
chart: .cache/bin/helm
	.cache/bin/helm lint --strict charts/cairn --values charts/cairn/ci/install-values.yaml
	.cache/bin/helm template cairn charts/cairn --namespace cairn --values charts/cairn/ci/install-values.yaml > /dev/null

.cache/bin/helm: .ci/helm/go.mod .ci/helm/go.sum
	cd .ci/helm && $(GO) build -ldflags '-X helm.sh/helm/v4/internal/version.version=v4.3.2' -o ../../.cache/bin/helm helm.sh/helm/v4/cmd/helm

## image: OCI image archives (docker-archive: a manifest.json with
## RepoTags, which `ctr -n k8s.io images import` and `kind load
## image-archive` read) of cairn, PostgreSQL 13 and 15, the 13-to-15
## pg_upgrade image and etcd 3.4-3.7, under .cache/images, tagged as the
## renderer names them; no Docker engine. images/build is the tool
## (go-containerregistry, a module of its own); Debian's packages come
## through images/build/fetch-debs (a sources list of its own, apt-get
## download, dpkg -x). Every date in an archive is SOURCE_DATE_EPOCH (0
## when unset): the same inputs give the same bytes. Each archive is
## checked once built (imagebuild check: unpacked, no library missing,
## its programs run through the image's own loader). See docs/images.md.
IMG      := .cache/images
IMGTOOL  := $(IMG)/bin/imagebuild
IMGROOTS := $(IMG)/roots
ETCD_IMAGES := $(IMG)/etcd-3.7.tar $(IMG)/etcd-3.6.tar $(IMG)/etcd-3.5.tar $(IMG)/etcd-3.4.tar
IMAGES   := $(IMG)/cairn.tar $(IMG)/postgres-15.tar $(IMG)/postgres-15-previous.tar $(IMG)/postgres-13.tar $(IMG)/postgres-upgrade-13-to-15.tar $(ETCD_IMAGES) $(IMG)/pause.tar
CAIRN_SRC := $(shell git ls-files '*.go' go.mod go.sum 2>/dev/null | grep -v -e '^images/' -e '_test\.go$$' -e '^testbed/')
IMGTOOL_SRC := $(wildcard images/build/*.go) images/build/go.mod images/build/go.sum renderer/options.go version/version.go planner/spec/versions.go testbed/sandbox/sandbox.go

image: $(IMAGES) $(IMAGES:.tar=.checked)

# Archives made by a pattern rule are kept, not removed as intermediates.
.SECONDARY: $(IMAGES)

# The binaries are replaced only when their bytes change (a stamp records
# the build), so that an edit that builds the same binary rebuilds no
# archive.
$(IMGTOOL): $(IMGTOOL).stamp ;
$(IMGTOOL).stamp: $(IMGTOOL_SRC)
	cd images/build && $(GO) build -o ../../$(IMGTOOL).new .
	cmp -s $(IMGTOOL).new $(IMGTOOL) && rm $(IMGTOOL).new || mv $(IMGTOOL).new $(IMGTOOL)
	touch $@

$(IMG)/bin/cairn: $(IMG)/bin/cairn.stamp ;
$(IMG)/bin/cairn.stamp: $(CAIRN_SRC)
	mkdir -p $(@D) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(IMG)/bin/cairn.new ./cmd/cairn
	cmp -s $(IMG)/bin/cairn.new $(IMG)/bin/cairn && rm $(IMG)/bin/cairn.new || mv $(IMG)/bin/cairn.new $(IMG)/bin/cairn
	touch $@

# A Debian root (images/build/roots.txt), fetched again when its list changes.
$(IMGROOTS)/%/.debs: images/build/fetch-debs images/build/roots.txt | $(IMGTOOL)
	IMAGEBUILD=$(IMGTOOL) images/build/fetch-debs $*

$(IMG)/cairn.tar: $(IMG)/bin/cairn $(IMGROOTS)/bookworm-base/.debs $(IMGTOOL)
	$(IMGTOOL) cairn -bin $< -base $(IMGROOTS)/bookworm-base -out $@

$(IMG)/postgres-15.tar: $(IMGROOTS)/bookworm-pg15/.debs $(IMGTOOL)
	$(IMGTOOL) postgres -root $(<D) -out $@

# The 15 release before the newest, that a minor upgrade starts from.
$(IMG)/postgres-15-previous.tar: $(IMGROOTS)/bookworm-pg15-previous/.debs $(IMGTOOL)
	$(IMGTOOL) postgres -root $(<D) -out $@

$(IMG)/postgres-13.tar: $(IMGROOTS)/bullseye-pg13/.debs $(IMGTOOL)
	$(IMGTOOL) postgres -root $(<D) -out $@

$(IMG)/postgres-upgrade-13-to-15.tar: $(IMGROOTS)/bullseye-pg13/.debs $(IMGROOTS)/bookworm-pg15/.debs $(IMGTOOL)
	$(IMGTOOL) postgres-upgrade -from $(IMGROOTS)/bullseye-pg13 -to $(IMGROOTS)/bookworm-pg15 -out $@

# etcd-<minor>.tar carries the binary `make testbin` built or fetched.
$(IMG)/etcd-3.7.tar: .cache/bin/etcd $(IMGROOTS)/bookworm-base/.debs $(IMGTOOL)
	$(IMGTOOL) etcd -bin $< -base $(IMGROOTS)/bookworm-base -out $@

$(IMG)/etcd-%.tar: .cache/bin/etcd-% $(IMGROOTS)/bookworm-base/.debs $(IMGTOOL)
	$(IMGTOOL) etcd -bin $< -base $(IMGROOTS)/bookworm-base -out $@

# The test node's pod sandbox (testbed/kubenode), cairn's own pause.
$(IMG)/bin/pause: images/build/pause/main.go
	mkdir -p $(@D) && cd images/build && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o ../../$@ ./pause

$(IMG)/pause.tar: $(IMG)/bin/pause $(IMGTOOL)
	$(IMGTOOL) pause -bin $< -out $@

$(IMG)/%.checked: $(IMG)/%.tar
	$(IMGTOOL) check $< > $@.tmp && cat $@.tmp && mv $@.tmp $@

## image-test: the image tool's own module: vet and its tests (fake
## roots: layout, users, env, entry points, byte-identical archives from
## two builds); the real images are `make image`'s.
image-test:
	cd images/build && $(GO) vet ./... && $(GO) test -count=1 ./...
