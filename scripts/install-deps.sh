#!/usr/bin/env bash
# Install the Debian 12 packages gpupool needs (build, tests, and later phases).
# Safe to run repeatedly: quiet and does nothing when everything is installed.
#   install-deps.sh            the packages every build and `make test` need
#   install-deps.sh coverage   only what `make coverage` adds (gcovr)
set -euo pipefail

BASE_PACKAGES=(
    # build
    build-essential
    cmake
    pkg-config
    # unit / property tests
    libcmocka-dev
    # integration tests of gpupoold (standard library only); openssl makes
    # the TLS test's certificate (the test is skipped without it)
    python3
    openssl
    # `gpupool top` on a terminal, tested in a tmux pane (send-keys, capture-pane)
    tmux
    # libFuzzer fuzz targets and sanitizer runtime
    clang
    libclang-rt-14-dev
    # later phases (daemon, CLI, agent, simulator)
    libjansson-dev
    libsqlite3-dev
    # the PostgreSQL store (libpq) and the throw-away clusters its tests start
    libpq-dev
    postgresql
    nftables  # the agent's network fence between tenants (docs/agent.md "The network fence")
    iproute2  # ip netns and veth pairs: the partition tests (tests/integration/test_partitions.py)
    libmicrohttpd-dev
    libcurl4-gnutls-dev
    libgnutls28-dev
    libyaml-dev
    gnuplot-nox
    # /metrics checked by promtool, a real Prometheus scraping gpupoold
    prometheus
    skopeo umoci docker-registry  # the image store and its test's registry (issue 31)
    # the web dashboard tested in headless Chromium over the DevTools protocol (tests/web)
    chromium
    nodejs
    node-ws
    runc busybox-static golang-github-containers-common  # replicas in containers: the runtime, the tests' dir: image, the seccomp profile
    crun  # the OCI runtime the agent picks on cgroup v2 hosts (tests/agent/test_container.c checks that choice)
    glewlwyd oathtool  # a real OIDC provider for the sign-in tests (tests/integration/idp.py) and TOTP codes for it
    faketime  # libfaketime: a node's clock an hour off in tests/integration/test_machine_faults.py (issue 38)
)

# `make coverage` only (scripts/coverage.sh): gcovr reads the gcov counters.
COVERAGE_PACKAGES=(
    gcovr
)

case "${1:-}" in
    "") PACKAGES=("${BASE_PACKAGES[@]}") ;;
    coverage) PACKAGES=("${COVERAGE_PACKAGES[@]}") ;;
    *) echo "install-deps.sh: unknown group '$1' (expected none or 'coverage')" >&2; exit 2 ;;
esac

missing=()
for pkg in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    if [[ "$status" != "install ok installed" ]]; then
        missing+=("$pkg")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "install-deps.sh: missing Debian packages: ${missing[*]}" >&2
    echo "install-deps.sh: not running as root and sudo is not available;" >&2
    echo "install-deps.sh: install them as root with:" >&2
    echo "    apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
fi

echo "install-deps.sh: installing missing packages: ${missing[*]}"
"${SUDO[@]}" apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
