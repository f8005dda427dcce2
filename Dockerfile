# The cairn image: one static binary at /cairn. The renderer's database pods
# copy it into a shared volume (`cairn instance install`) and run the
# instance manager from there; the runtime Deployment runs it directly.
#
#   docker build -t ghcr.io/cairn-dev/cairn:v0.1.0 .
#
# The release workflow builds it for linux/amd64 and linux/arm64 with
# buildx, the Go build cross-compiling on the builder's platform, and
# stamps the release and commit (RELEASE, COMMIT) as `cairn version` shows.
#
# Without a Docker engine, `make image` builds the same image (and the
# PostgreSQL, pg_upgrade and etcd ones) into .cache/images (docs/images.md).
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
ARG TARGETOS=linux TARGETARCH=amd64 RELEASE COMMIT
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN v=github.com/cairn-dev/cairn/version; \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w ${RELEASE:+-X $v.Release=$RELEASE} ${COMMIT:+-X $v.Commit=$COMMIT}" -o /out/cairn ./cmd/cairn

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/cairn /cairn
USER 65532:65532
ENTRYPOINT ["/cairn"]
