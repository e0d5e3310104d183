#!/usr/bin/env bash
# Builds the rstar images one deployment target needs, tagged by version (never `latest`): the six services
# and the trainer worker of that target's accelerator. Needs a Docker (BuildKit) engine.
#   bash infra/docker/build-images.sh REGISTRY TARGET     # e.g. registry.example.com/rstar mi300x
#     TARGET  mi300x  the services + trainer:<v>-rocm (ROCm PyTorch base)
#             nvidia  the services + trainer:<v>-cuda (CUDA PyTorch base)
#             local   the services + trainer:<v>-cuda (its torch also runs on CPU: overlays/local)
#             all     both trainers
# The version is the root package.json's; RSTAR_IMAGE_VERSION overrides it. With RSTAR_PUSH=1 every image
# is pushed and its digest resolved; RSTAR_DIGESTS_OUT=FILE then gets a kustomize `images:` list (one
# `{ name: rstar/<name>, newName: <registry>/<name>, digest: sha256:... }` per image) to append to a
# kustomization, pinning the deployment to exactly what was pushed (docs/deploy.md, step 2).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"; cd "$root"
registry="${1:-rstar}"
target="${2:-}"
version="${RSTAR_IMAGE_VERSION:-$(node -p 'require("./package.json").version')}"
case "$version" in ''|latest) echo "build-images: refusing version \"$version\": tag images by version" >&2; exit 2;; esac
case "$target" in
  mi300x) trainers=(rocm);;
  nvidia|local) trainers=(cuda);;
  all) trainers=(rocm cuda);;
  *) echo "build-images: name the target as the second argument: mi300x (ROCm), nvidia or local (CUDA), or all; got \"$target\"" >&2; exit 2;;
esac
target_of() { case "$1" in tool-execution|reward-grading|optimization) echo sandboxed-service;; *) echo service;; esac; }
built=()
for svc in control-plane policy-serving tool-execution reward-grading resampling optimization; do
  tag="$registry/$svc:$version"
  docker build -f infra/docker/service.Dockerfile --target "$(target_of "$svc")" --build-arg SERVICE="$svc" --build-arg VERSION="$version" -t "$tag" .
  built+=("$tag")
done
for accel in "${trainers[@]}"; do
  tag="$registry/trainer:$version-$accel"
  if [ "$accel" = rocm ]; then
    docker build -f infra/docker/trainer.Dockerfile --build-arg VERSION="$version" -t "$tag" .
  else
    docker build -f infra/docker/trainer.Dockerfile --build-arg VERSION="$version" --build-arg ACCELERATOR=cuda \
      --build-arg BASE_IMAGE=pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime -t "$tag" .
  fi
  built+=("$tag")
done
if [ "${RSTAR_PUSH:-0}" = 1 ]; then
  [ -z "${RSTAR_DIGESTS_OUT:-}" ] || echo "images:" > "$RSTAR_DIGESTS_OUT"
  for t in "${built[@]}"; do
    docker push "$t"
    # The digest the registry stored: what the overlay should run, whatever the tag points to later.
    digest="$(docker inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$t" | grep -m1 "^${t%:*}@")"
    name="${t#"$registry"/}"; name="${name%%:*}"
    echo "build-images: $t -> $digest"
    [ -z "${RSTAR_DIGESTS_OUT:-}" ] || echo "  - { name: rstar/$name, newName: ${digest%@*}, digest: ${digest#*@} }" >> "$RSTAR_DIGESTS_OUT"
  done
fi
printf 'build-images: %s\n' "${built[@]}"
