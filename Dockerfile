# The image the Kubernetes manifests (examples/k8s) run: distill, validate and
# rewardd on a slim Debian that has /bin/sh for the worker's command.
#   make image IMAGE=registry.example.com/team/rubricforge   # tags $(IMAGE):$(VERSION)
#   docker push registry.example.com/team/rubricforge:VERSION
# then pin that tag, or better its digest, in examples/k8s (docs/scale-out.md).
# Base images are pinned by version; pin them by digest too where your
# registry policy asks for it.
FROM golang:1.26-bookworm AS build
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/ ./cmd/distill ./cmd/validate ./cmd/rewardd

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --create-home rubricforge
COPY --from=build /out/ /usr/local/bin/
USER 10001
WORKDIR /home/rubricforge
ENTRYPOINT []
CMD ["distill", "-h"]
