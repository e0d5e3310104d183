# syntax=docker/dockerfile:1.7
# The trainer worker (workers/trainer: `python -m rstar_trainer serve`, FSDP2 under torchrun) on a PyTorch
# base image that brings its own accelerator build of torch. Never install torch from PyPI here: on AMD the
# ROCm build is the only one that drives MI300X, and a PyPI wheel over it would silently replace it.
#
#   AMD MI300X (ROCm, the default):
#     docker build -f infra/docker/trainer.Dockerfile -t rstar/trainer:0.1.0-rocm .
#   NVIDIA (CUDA):
#     docker build -f infra/docker/trainer.Dockerfile --build-arg BASE_IMAGE=pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime \
#       --build-arg ACCELERATOR=cuda -t rstar/trainer:0.1.0-cuda .
#
# The extra Python packages are the pure-Python part of workers/trainer/requirements.lock
# (infra/docker/trainer-requirements.txt), installed with --no-deps; a check at build time fails the build
# when the base has no torch, when torch is not the accelerator build asked for, or when anything changed it.
ARG BASE_IMAGE=rocm/pytorch:rocm7.0_ubuntu24.04_py3.12_pytorch_release_2.8.0

FROM ${BASE_IMAGE} AS trainer
ARG ACCELERATOR=rocm
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="rstar trainer worker" org.opencontainers.image.version="${VERSION}"
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /opt/rstar
COPY infra/docker/trainer-requirements.txt /tmp/trainer-requirements.txt
COPY workers/trainer/pyproject.toml workers/trainer/pyproject.toml
COPY workers/trainer/rstar_trainer workers/trainer/rstar_trainer
# The torch build before and after the install must be the same, and of the accelerator asked for.
RUN python3 -c "import torch; print(torch.__version__)" > /tmp/torch-before \
    && pip install --no-cache-dir --no-deps --disable-pip-version-check -r /tmp/trainer-requirements.txt \
    && pip install --no-cache-dir --no-deps --no-build-isolation --disable-pip-version-check ./workers/trainer \
    && python3 -c "import torch; print(torch.__version__)" | cmp -s - /tmp/torch-before \
    && python3 -c "import sys, torch, transformers, rstar_trainer; acc = sys.argv[1]; \
ok = (acc == 'rocm' and torch.version.hip is not None) or (acc == 'cuda' and torch.version.cuda is not None); \
sys.exit(0 if ok else f'torch {torch.__version__} is not a {acc} build (hip={torch.version.hip}, cuda={torch.version.cuda})')" "${ACCELERATOR}" \
    && groupadd --gid 10001 rstar && useradd --uid 10001 --gid 10001 --create-home --shell /usr/sbin/nologin rstar \
    && mkdir -p /var/lib/rstar-trainer && chown 10001:10001 /var/lib/rstar-trainer
# The ROCm and CUDA runtimes need the device files the device plugin mounts; the AMD plugin's /dev/kfd and
# /dev/dri are group `video`/`render` on the node: the pod adds those groups (supplementalGroups).
USER 10001:10001
ENV PYTHONUNBUFFERED=1 HF_HOME=/var/lib/rstar-trainer/hf
EXPOSE 31000
HEALTHCHECK --interval=15s --timeout=5s --start-period=180s --retries=3 \
  CMD ["python3", "-c", "import urllib.request, sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:31000/health/live', timeout=4).status == 200 else 1)"]
ENTRYPOINT ["python3", "-m", "rstar_trainer", "serve", "--host", "0.0.0.0", "--port", "31000", "--state-dir", "/var/lib/rstar-trainer/state"]
