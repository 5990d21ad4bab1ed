# feedrunner: production image (docs/docker.md). `docker run ... feedrunner start` runs the adapter, the
# fetch workers and the runner from the environment (see .env.example); `adapter`, `worker`, `runner`
# run one part; `dev` (in the image `docker build --target dev` makes) the whole stack on a local
# chain. Runs as `node` with a read-only root filesystem (`docker run --read-only --tmpfs /tmp`):
# everything it needs at run time is compiled here.
#
# BASE_IMAGE: the official Node LTS image by default; where Docker Hub is out of reach, the same image
# from a mirror, or the stand-in docker/standin-base.sh builds from Debian and the npm registry.
ARG BASE_IMAGE=node:22-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY stubs ./stubs
# npm ci refuses this lockfile (NOTES.md: the registry lacks other platforms' optional packages);
# install honours it. --ignore-scripts: `prepare` needs the sources, copied next.
RUN npm install --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY contracts ./contracts
# src/ -> dist/ (plain JavaScript) and the Solidity contracts -> .cache/contracts: no TypeScript
# loader and no solc at run time, and nothing written under /app.
RUN node bin/build.js && test -f dist/BUILD.json && test -n "$(ls .cache/contracts)"

FROM build AS production-modules
# No solc, tsx, anvil or test tools at run time: what they make is built above. (TypeScript itself
# stays: valibot and @solana/kit, under bull-board and the EA framework, name it as a peer.)
RUN npm prune --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${BASE_IMAGE} AS app
# The dev stack records where it runs for the other commands; /app is read-only, /tmp is the tmpfs.
# EA_HOST: feedrunner listens on loopback by default, which no published port reaches in a container;
# here every interface of the container's own network (`dev` stays on loopback whatever it says).
ENV NODE_ENV=production DEV_STATE_FILE=/tmp/feedrunner-dev.json EA_HOST=0.0.0.0
WORKDIR /app
# Owned by root and read-only to `node`: the service cannot change its own code.
COPY --from=production-modules /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/.cache/contracts ./.cache/contracts
COPY package.json ./
COPY bin ./bin
COPY contracts ./contracts
COPY jobs ./jobs
# 8080 the adapter (EA_PORT, with /live and /ready), 9080 its metrics, 9090 /metrics, /live and
# /ready of `worker` and `runner` (OPERATIONS_PORT).
EXPOSE 8080 9080 9090
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "bin/healthcheck.js"]
ENTRYPOINT ["node", "bin/feedrunner.js"]

# `docker build --target dev`: the production image and anvil (43 MB), for `dev`, the whole stack on
# a local chain inside the container.
FROM app AS dev
COPY --from=build /app/node_modules/@foundry-rs ./node_modules/@foundry-rs
USER node
CMD ["dev"]

# The default target (the last stage): what a node operator runs.
FROM app AS production
USER node
CMD ["start"]
