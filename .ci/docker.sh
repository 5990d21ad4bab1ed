# Sourced by .ci/run: makes a Docker daemon and a base image available for the container lane
# (test/container), each step bounded in time. On success it exports FEEDRUNNER_BASE_IMAGE; on any
# failure it says why and leaves the lane to report itself as not run. A dockerd started here is
# stopped when .ci/run exits.
docker_lane() {
  docker_answers() { timeout 20 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
  if ! docker_answers; then
    if [ "$(id -u)" != 0 ]; then
      echo "container lane: no Docker daemon and not root, so none can be started: the lane will say it did not run"
      return 0
    fi
    if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1 \
      || ! command -v docker-compose >/dev/null 2>&1; then
      echo "installing docker.io, docker-compose and debootstrap from Debian's packages (bounded: 5 min)"
      (timeout 300 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 300 \
        apt-get install -y -qq docker.io docker-compose debootstrap >/dev/null) \
        || echo "container lane: could not install docker.io / docker-compose / debootstrap"
    fi
    if command -v dockerd >/dev/null 2>&1; then
      echo "starting dockerd for this run (log: /tmp/feedrunner-ci-dockerd.log)"
      setsid dockerd >/tmp/feedrunner-ci-dockerd.log 2>&1 &
      ci_dockerd_pid=$!
      trap 'kill "$ci_dockerd_pid" 2>/dev/null; wait "$ci_dockerd_pid" 2>/dev/null' EXIT
      for _ in $(seq 1 60); do docker_answers && break; sleep 1; done
    fi
    if ! docker_answers; then
      echo "container lane: dockerd did not answer within 60 s (tail of its log below); the lane will say it did not run"
      tail -5 /tmp/feedrunner-ci-dockerd.log 2>/dev/null || true
      return 0
    fi
  fi
  echo "Docker daemon $(docker version --format '{{.Server.Version}}') answers"
  # Earlier builds leave untagged images (a build stage each time the sources change): keep a day's.
  docker image prune -f --filter until=24h >/dev/null 2>&1 || true
  # Docker Hub is out of reach here: the stand-in base, found again by its content key after the first
  # build (~3 min on a quiet machine, measured 194 s with a load of 18 on 2 cores).
  local base
  if docker image inspect node:22-bookworm-slim >/dev/null 2>&1; then
    base=node:22-bookworm-slim
  elif base=$(timeout 900 bash docker/standin-base.sh); then
    :
  else
    echo "container lane: the stand-in base image could not be built within 15 min; the lane will say it did not run"
    export FEEDRUNNER_CONTAINER_LANE_SKIP="the stand-in base image could not be built within 15 min (docker/standin-base.sh; see .ci/run's output)"
    return 0
  fi
  export FEEDRUNNER_BASE_IMAGE="$base"
  echo "container lane runs on base image $FEEDRUNNER_BASE_IMAGE"
}
docker_lane
