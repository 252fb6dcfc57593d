# One image for the three services: fleet, extender and loadgen.
#
#   build:   python -m venv + pip install of this repo (wheels only; nothing is compiled)
#   runtime: the same slim Python base, the venv copied in, a non-root user, no pip cache,
#            no compilers and no build context beyond the installed package.
#
# The default command is the extender (the service most clusters run); the manifests override
# it with `fleet serve` and `loadgen ...`. Build from the repository root:
#   docker build -t dra-testbed:dev .
ARG PYTHON_IMAGE=python:3.12.10-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/dra-testbed
# Sources only (see .dockerignore); the package metadata first so its layer caches.
COPY pyproject.toml README.md ./
COPY testbed ./testbed
COPY fleet ./fleet
COPY extender ./extender
COPY loadgen ./loadgen
# uvloop is a declared dependency on Linux; the import check fails the build if its wheel
# did not install, rather than silently falling back to the default event loop.
RUN /opt/dra-testbed/bin/pip install --no-cache-dir --no-compile . \
    && /opt/dra-testbed/bin/python -c "import uvloop, aiohttp, kubernetes_asyncio" \
    && /opt/dra-testbed/bin/python -m compileall -q /opt/dra-testbed

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="dra-testbed" \
      org.opencontainers.image.description="fleet, extender and loadgen of the DRA scheduling testbed" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="${PYTHON_IMAGE}"
# A fixed numeric UID/GID so runAsNonRoot can verify it without reading /etc/passwd.
RUN groupadd --system --gid 65532 dra-testbed \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin dra-testbed
COPY --from=build /opt/dra-testbed /opt/dra-testbed
# Bytecode is compiled at build time; the root filesystem is read-only at run time.
ENV PATH=/opt/dra-testbed/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    EXTENDER_ADDRESS=0.0.0.0
USER 65532:65532
EXPOSE 8888 8889
# The extender on 0.0.0.0:8888, watching the cluster it runs in (in-cluster ServiceAccount).
CMD ["extender", "serve"]
