# latscope in a container, for `latscope k8s job` (docs/distributed.md):
#   docker build -t REGISTRY/latscope:TAG . && docker push REGISTRY/latscope:TAG
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked && strip target/release/latscope

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/latscope /usr/local/bin/latscope
# The Job runs it as nobody; the run store goes to /tmp (LATSCOPE_DB).
USER 65534:65534
ENTRYPOINT ["latscope"]
