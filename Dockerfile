# One image holds both binaries: the operator (manager) and the scheduler it runs (kube-scheduler),
# so that what the operator validates is exactly what the scheduler runs.
FROM golang:1.26 AS builder
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same target that `make build` runs locally, so the two cannot drift.
RUN make build

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /workspace/bin/manager /workspace/bin/kube-scheduler /
USER 65532:65532
ENTRYPOINT ["/manager"]
