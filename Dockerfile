# nodeid: the CLI, for "nodeid serve" and the operator's commands, as a
# static binary in an image of its own, run by a user that is not root.
#
#   docker build -t nodeid .
#   docker run --rm -e DATABASE_URL nodeid list
#   docker run --rm -p 8080:8080 -e DATABASE_URL nodeid serve --listen 0.0.0.0:8080
#
# The build stage's Go matches go.mod's go directive (1.26).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary, which needs no libc in the final image.
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/nodeid ./cmd/nodeid \
 && /out/nodeid version

FROM scratch
# CA certificates, for a DSN with sslmode=verify-full.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/nodeid /nodeid
# 65532: the conventional "nonroot" user of distroless images; no shell,
# no package manager, nothing else in the image.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/nodeid"]
CMD ["--help"]
