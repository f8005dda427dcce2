# cairn — build and test. `make test` runs every test; CI runs exactly that.

GO       ?= go
FUZZTIME ?= 20s
PKGS     := ./...

.PHONY: all build test vet fmt-check unit fuzz bench generate clean testbin testbin-kube

all: build

build:
	$(GO) build -o bin/cairn ./cmd/cairn

## test: everything CI checks: formatting, vet, unit tests, a bounded fuzz run.
test: fmt-check vet unit fuzz

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit: testbin testbin-kube
	$(GO) test -count=1 $(PKGS)

## testbin: the real servers the tests run, built through the Go module proxy.
## etcd 3.7.3, and 3.6 for the upgrade walkthrough (under a minute each).
testbin: .cache/bin/etcd .cache/bin/etcd-3.6

.cache/bin/etcd: .ci/etcd/go.mod .ci/etcd/go.sum .ci/etcd/main.go
	cd .ci/etcd && $(GO) build -o ../../.cache/bin/etcd .

.cache/bin/etcd-3.6: .ci/etcd36/go.mod .ci/etcd36/go.sum .ci/etcd36/main.go
	cd .ci/etcd36 && $(GO) build -o ../../.cache/bin/etcd-3.6 .

## fuzz: short, bounded runs of the spec decoder, postgresql.conf writer
## (checked by PostgreSQL 15's postgres -C when it is installed) and policy
## loader fuzzers.
fuzz:
	$(GO) test ./planner/spec -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./planner/spec -run '^$$' -fuzz '^FuzzPostgresConf$$' -fuzztime 5s -fuzzminimizetime 2s
	$(GO) test ./policies -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 10s -fuzzminimizetime 5s

## bench: planning and rendering (with kustomize builds) 1,000 mixed clusters.
bench:
	$(GO) test ./planner -run '^$$' -bench . -benchmem
	$(GO) test ./renderer -run '^$$' -bench . -benchmem -benchtime 1x
	$(GO) test ./policies -run '^$$' -bench . -benchmem

## generate: rewrite generated files (JSON Schemas, reference page, golden outputs).
generate:
	$(GO) test ./planner/spec -run TestGenerated -update
	$(GO) test ./cmd/cairn -update
	$(GO) test ./renderer -update

clean:
	rm -rf bin .cache

## testbin-kube: kube-apiserver and kube-controller-manager built from
## k8s.io/kubernetes through the Go module proxy (about 8 minutes on 2 cores
## the first time, cached after; the second binary links in seconds once
## the first is built).
testbin-kube: .cache/bin/kube-apiserver .cache/bin/kube-controller-manager

.cache/bin/kube-apiserver: .ci/kube/go.mod .ci/kube/go.sum
	cd .ci/kube && $(GO) build -o ../../.cache/bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver

.cache/bin/kube-controller-manager: .ci/kube/go.mod .ci/kube/go.sum
	cd .ci/kube && $(GO) build -o ../../.cache/bin/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
