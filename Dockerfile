# Brigade in a container: one image per runtime.
#   docker build -t brigade:axum .
#   docker build --build-arg RUNTIME=actix -t brigade:actix .
#   docker build --build-arg RUNTIME=default -t brigade:all .   (every runtime, for `compare`)
# RUNTIME becomes `cargo build --no-default-features --features $RUNTIME,embedded,mongo` (`default`: every
# runtime of the registry; `brigade runtimes` lists them).
# See docs/containers.md.
#
# Where no Rust image can be pulled (CI, scripts/containers.sh), the binary may be built on the host
# instead, one per runtime with the same features, and handed in as the build context; only the
# builder changes:
#   docker build --build-arg BUILDER=prebuilt --build-arg RUNTIME=actix -f Dockerfile DIR
# takes DIR/prebuilt/actix/brigade (RUNTIME picks the binary); the runtime stage below is the same
# either way. It reads with the Dockerfile frontend built into BuildKit (Docker Engine 20.10's too,
# and buildah's): no `# syntax=` line, whose frontend image would have to be pulled.

ARG RUST_IMAGE=rust:1-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
# Which stage provides the binary: `build` (cargo-chef, the default) or `prebuilt`.
ARG BUILDER=build

# --- chef: cargo-chef, which turns the manifests into a recipe of dependencies only ---
FROM ${RUST_IMAGE} AS chef
RUN cargo install cargo-chef --locked --version ^0.1
WORKDIR /src

# --- planner: the dependency recipe; it changes only when a manifest or Cargo.lock does ---
FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

# --- build: dependencies first (a cached layer), then Brigade itself ---
FROM chef AS build
ARG RUNTIME=axum
COPY --from=planner /src/recipe.json recipe.json
# (cook reuses the recipe's Cargo.lock as it is; the final build checks it with --locked)
RUN cargo chef cook --release --no-default-features --features "${RUNTIME},embedded,mongo" \
        --bin brigade --recipe-path recipe.json
COPY . .
RUN cargo build --release --locked --no-default-features --features "${RUNTIME},embedded,mongo" --bin brigade \
    && ./target/release/brigade runtimes

# --- prebuilt: a binary built outside, prebuilt/$RUNTIME/brigade of the build context ---
FROM scratch AS prebuilt
ARG RUNTIME=axum
COPY prebuilt/${RUNTIME}/brigade /src/target/release/brigade

# --- binary: whichever BUILDER names (unused stages are skipped) ---
FROM ${BUILDER} AS binary

# --- runtime: a slim image with the binary only, as an unprivileged user ---
FROM ${RUNTIME_IMAGE} AS runtime
ARG RUNTIME=axum
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --create-home --home-dir /app --shell /usr/sbin/nologin brigade \
    && install -d -o brigade -g brigade /app/data
COPY --from=binary /src/target/release/brigade /usr/local/bin/brigade
USER brigade:brigade
WORKDIR /app
LABEL org.opencontainers.image.title="brigade" \
      org.opencontainers.image.description="Brigade restaurant services on the ${RUNTIME} runtime"
EXPOSE 8080
# Slim images have no curl: the binary probes itself.
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=6 \
    CMD ["brigade", "probe", "http://127.0.0.1:8080/ready"]
ENTRYPOINT ["brigade"]
CMD ["serve", "--service", "waiter", "--listen", "0.0.0.0:8080", "--data-dir", "/app/data"]
