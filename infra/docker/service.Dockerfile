# syntax=docker/dockerfile:1.7
# The rstar services (NestJS, compiled JavaScript from dist/). One image per service, from this file:
#
#   docker build -f infra/docker/service.Dockerfile --build-arg SERVICE=control-plane --target service \
#     -t rstar/control-plane:0.1.0 .
#   docker build -f infra/docker/service.Dockerfile --build-arg SERVICE=tool-execution --target sandboxed-service \
#     -t rstar/tool-execution:0.1.0 .
#
# Targets: `service` (Node only: control-plane, policy-serving, resampling) and `sandboxed-service` (Node
# plus bubblewrap and the sandbox's CPython with infra/python/requirements.txt: tool-execution, and the two
# services that run a sandbox pool of their own, reward-grading for symbolic checks and optimization for the
# SFT stage's tool calls). infra/docker/build-images.sh builds all six with the right target and a version tag.
# Both run as uid 10001, listen on 8080 and check themselves on /health/live.

ARG NODE_IMAGE=node:20.19.5-bookworm-slim
# CPython >= 3.12 for the sandbox: the zygote makes its warmed heap immortal before forking (PEP 683).
ARG PYTHON_IMAGE=python:3.12.12-slim-bookworm

FROM ${NODE_IMAGE} AS build
WORKDIR /src
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN npm install -g pnpm@12.4.2
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml tsconfig.base.json tsconfig.json nx.json ./
COPY libs libs
COPY services services
COPY apps apps
COPY configs configs
# Workspace members without sources in the image: their manifests, so the frozen lock file matches.
COPY test/package.json test/package.json
COPY benchmarks/package.json benchmarks/package.json
COPY infra/build infra/build
RUN pnpm install --frozen-lockfile
ARG SERVICE
RUN test -n "${SERVICE}" || { echo "build arg SERVICE is required (a folder of services/)"; exit 2; } \
    && node infra/build/build-service.mjs "${SERVICE}" \
    && ln -s "services/${SERVICE}/src/main.js" "dist/services/${SERVICE}/main.js" \
    && mv "dist/services/${SERVICE}" /out
# control-plane serves the dashboard at /ui: its static build goes beside the service (RSTAR_UI_DIR below).
RUN if [ "${SERVICE}" = control-plane ]; then \
      pnpm exec vite build --config apps/dashboard/vite.config.mts && cp -r dist/apps/dashboard /out/ui; \
    fi
# Production dependencies only, in a tree of their own (the compiled services resolve them from /app/node_modules).
WORKDIR /deps
RUN cp /src/package.json /src/pnpm-lock.yaml ./ \
    && printf 'packages: []\nallowBuilds:\n  "@nestjs/core": true\n  protobufjs: true\n' > pnpm-workspace.yaml \
    && pnpm install --prod --ignore-scripts --no-frozen-lockfile --config.confirmModulesPurge=false

FROM ${NODE_IMAGE} AS service
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="rstar service" org.opencontainers.image.version="${VERSION}"
# RSTAR_UI_DIR: the dashboard's build (only control-plane's image has one, and only control-plane reads it).
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0 RSTAR_UI_DIR=/app/dist/ui
WORKDIR /app
RUN groupadd --gid 10001 rstar && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin rstar
COPY --from=build /deps/node_modules node_modules
COPY --from=build /out dist
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "--enable-source-maps", "dist/main.js"]

FROM ${NODE_IMAGE} AS node-runtime

FROM ${PYTHON_IMAGE} AS sandbox-python
COPY infra/python/requirements.txt /tmp/requirements.txt
RUN python3 -m venv /opt/rstar-python && /opt/rstar-python/bin/pip install --no-cache-dir --disable-pip-version-check -r /tmp/requirements.txt

FROM ${PYTHON_IMAGE} AS sandboxed-service
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="rstar sandboxed service" org.opencontainers.image.version="${VERSION}"
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap=0.8.0-2+deb12u1 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 rstar && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin rstar
COPY --from=node-runtime /usr/local/bin/node /usr/local/bin/node
COPY --from=sandbox-python /opt/rstar-python /opt/rstar-python
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0 RSTAR_PYTHON=/opt/rstar-python/bin/python \
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
WORKDIR /app
COPY --from=build /deps/node_modules node_modules
COPY --from=build /out dist
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=90s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "--enable-source-maps", "dist/main.js"]
