# Sourced by scripts/test: the browser tests drive Debian's chromium (never a
# browser downloaded by a test tool): its headless shell
# (chromium-headless-shell, the same build's old headless mode, about half the
# full browser's CPU a test), or the full chromium when only that is there.
# Install the headless shell when neither is there and we may.
ensure_chromium() {
    if command -v chromium-headless-shell >/dev/null 2>&1; then return 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing Debian's chromium-headless-shell for the browser tests"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            chromium-headless-shell fonts-liberation >/dev/null
    elif command -v chromium >/dev/null 2>&1; then
        echo "Using the full chromium for the browser tests (apt-get install chromium-headless-shell: half the CPU)." >&2
    else
        echo "chromium is not installed (apt-get install chromium-headless-shell): the browser tests will be skipped." >&2
    fi
}
