# What the explorer's browser scripts need (sourced by explorer-browser.sh and explorer-paint.sh):
# Debian's chromium (installed with apt-get when run as root and it is missing) and
# playwright-core from npm into $EXPLORER_NPM_DIR, never a browser download.
#
#   CHROMIUM=... NODE=... EXPLORER_NPM_DIR=... explorer_browser_ready

PLAYWRIGHT_VERSION=1.64.1

explorer_browser_ready() {
  if ! [ -x "$CHROMIUM" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "== installing Debian's chromium"
      apt-get update -q >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
    fi
    [ -x "$CHROMIUM" ] || { echo "FAIL: no Chromium at $CHROMIUM (apt-get install chromium)" >&2; exit 2; }
  fi
  if [ "$(cd "$EXPLORER_NPM_DIR" 2>/dev/null && "$NODE" -p 'require("playwright-core/package.json").version' 2>/dev/null)" != "$PLAYWRIGHT_VERSION" ]; then
    echo "== installing playwright-core $PLAYWRIGHT_VERSION from npm into $EXPLORER_NPM_DIR"
    mkdir -p "$EXPLORER_NPM_DIR"
    ( cd "$EXPLORER_NPM_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
      PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --loglevel=error "playwright-core@$PLAYWRIGHT_VERSION" )
  fi
}
