#!/usr/bin/env bash
# Builds every rstar image with a version tag (never `latest`): the six services and the trainer worker
# for ROCm and CUDA. Needs a Docker (BuildKit) engine.
#   bash infra/docker/build-images.sh [REGISTRY]      # e.g. registry.example.com/rstar; default "rstar"
# The version is the root package.json's; RSTAR_IMAGE_VERSION overrides it. Push with RSTAR_PUSH=1.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"; cd "$root"
registry="${1:-rstar}"
version="${RSTAR_IMAGE_VERSION:-$(node -p 'require("./package.json").version')}"
case "$version" in ''|latest) echo "build-images: refusing version \"$version\": tag images by version" >&2; exit 2;; esac
target_of() { case "$1" in tool-execution|reward-grading|optimization) echo sandboxed-service;; *) echo service;; esac; }
built=()
for svc in control-plane policy-serving tool-execution reward-grading resampling optimization; do
  tag="$registry/$svc:$version"
  docker build -f infra/docker/service.Dockerfile --target "$(target_of "$svc")" --build-arg SERVICE="$svc" --build-arg VERSION="$version" -t "$tag" .
  built+=("$tag")
done
docker build -f infra/docker/trainer.Dockerfile --build-arg VERSION="$version" -t "$registry/trainer:$version-rocm" .
docker build -f infra/docker/trainer.Dockerfile --build-arg VERSION="$version" --build-arg ACCELERATOR=cuda \
  --build-arg BASE_IMAGE=pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime -t "$registry/trainer:$version-cuda" .
built+=("$registry/trainer:$version-rocm" "$registry/trainer:$version-cuda")
if [ "${RSTAR_PUSH:-0}" = 1 ]; then for t in "${built[@]}"; do docker push "$t"; done; fi
printf 'build-images: %s\n' "${built[@]}"
