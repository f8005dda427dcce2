# The cairn image: one static binary at /cairn. The renderer's database pods
# copy it into a shared volume (`cairn instance install`) and run the
# instance manager from there; the runtime Deployment runs it directly.
#
#   docker build -t ghcr.io/cairn-dev/cairn:v0.1.0 .
#
# Without a Docker engine, `make image` builds the same image (and the
# PostgreSQL, pg_upgrade and etcd ones) into .cache/images (docs/images.md).
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/cairn ./cmd/cairn

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/cairn /cairn
USER 65532:65532
ENTRYPOINT ["/cairn"]
