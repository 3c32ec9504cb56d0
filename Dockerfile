# One image holds both binaries: the operator (manager) and the scheduler it runs (kube-scheduler),
# so that what the operator validates is exactly what the scheduler runs.
#
# The builder runs on the build machine's platform and cross-compiles for the target's (pure Go,
# CGO_ENABLED=0), so multi-platform builds need no emulation. Its Go is the go.mod version.
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same target that `make build` runs locally (static, with version ldflags), so the two
# cannot drift; `make test` builds it too.
RUN GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} make build

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /workspace/bin/manager /workspace/bin/kube-scheduler /
LABEL org.opencontainers.image.title="scheduler-profile-operator" \
      org.opencontainers.image.source="https://github.com/schedops/scheduler-profile-operator"
USER 65532:65532
ENTRYPOINT ["/manager"]
