#!/usr/bin/env bash
# Installs the Debian packages DeepRead needs to build, run and test: the Tauri 2 system libraries
# (WebKitGTK 4.1, GTK 3, librsvg, libsoup 3, appindicator), poppler (reference renderings), the
# headless display + WebDriver used by the desktop tests (with xdotool and GTK's Python bindings, which drag
# files onto the window from another X client, and a D-Bus session bus with GNOME Keyring: the system keyring
# the remote engine's API key is kept in), and fonts for every script the model writes (the
# webview falls back on them: without Noto CJK a Chinese page's Markdown is drawn as empty boxes), and
# epubcheck (with the Java runtime it needs), which the EPUB export's tests validate books with, LibreOffice's
# headless Writer and Calc, which print the Word and Excel exports in their tests, and unzip, with which the
# desktop tests read the Word and EPUB files the app exports. Only missing packages are installed.
set -euo pipefail
PACKAGES=(
  build-essential pkg-config curl file
  libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libsoup-3.0-dev libayatana-appindicator3-dev libxdo-dev
  poppler-utils
  xvfb xauth webkit2gtk-driver x11-utils imagemagick
  xdotool python3-gi gir1.2-gtk-3.0 dbus-daemon gnome-keyring
  fonts-dejavu-core fonts-noto-core fonts-noto-cjk
  epubcheck libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-math-nogui unzip
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
