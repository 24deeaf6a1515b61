# Sourced by scripts/test: the browser tests drive Debian's chromium (never a
# browser downloaded by a test tool). Install it when it is missing and we may.
ensure_chromium() {
    if command -v chromium >/dev/null 2>&1; then return 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing Debian's chromium for the browser tests"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            chromium fonts-liberation >/dev/null
    else
        echo "chromium is not installed (apt-get install chromium): the browser tests will be skipped." >&2
    fi
}
