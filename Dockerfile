# nodeid: the CLI, for "nodeid serve" and the operator's commands, as a
# static binary in an image of its own, run by a user that is not root.
#
#   docker build -t nodeid .
#   docker run --rm -e DATABASE_URL nodeid list
#   docker run --rm -p 8080:8080 -e DATABASE_URL nodeid serve --listen 0.0.0.0:8080
#
# The build stage's Go matches go.mod's go directive (1.26). The command
# is the module cmd/nodeid, built with the library of the same checkout
# (as scripts/release builds it): a workspace of these two modules only,
# so that the build fetches nothing of the repository's other modules.
FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV GOWORK=/src/image.work
COPY go.mod go.sum ./
COPY cmd/nodeid/go.mod cmd/nodeid/go.sum ./cmd/nodeid/
RUN go work init . ./cmd/nodeid \
 && v=$(go mod edit -json cmd/nodeid/go.mod | sed -n '/"Path": "github.com\/nodeid\/nodeid"/{n;s/.*"Version": "\(.*\)".*/\1/p;}') \
 && go work edit -replace "github.com/nodeid/nodeid@$v=." \
 && go mod download
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
