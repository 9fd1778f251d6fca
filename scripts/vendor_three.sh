#!/usr/bin/env bash
# Vendors three.js into web/vendor/ for the replay page (`cenic view`): the
# parts of three.js and its OrbitControls the page uses, bundled and
# minified by esbuild into one classic script defining the global `THREE`,
# with three.js's license. Run from the repository root when upgrading
# three.js (needs Node.js and npm; the registry only):
#
#     scripts/vendor_three.sh [THREE_VERSION]
#
# The page (web/replay.js) may only use the names exported below.
set -euo pipefail
VERSION="${1:-0.187.0}"
ESBUILD=0.28.2
ROOT="$PWD"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
npm init -y >/dev/null
npm install --no-audit --no-fund --silent "three@$VERSION" "esbuild@$ESBUILD"
cat > entry.js <<'JS'
export {
  AmbientLight, BoxGeometry, BufferGeometry, CanvasTexture, CapsuleGeometry, Color, CylinderGeometry,
  DirectionalLight, DoubleSide, Float32BufferAttribute, Group, HemisphereLight, Mesh, MeshLambertMaterial,
  NearestFilter, PerspectiveCamera, PlaneGeometry, Quaternion, RepeatWrapping, Scene, SphereGeometry,
  SRGBColorSpace, Vector3, WebGLRenderer, REVISION,
} from 'three';
export { OrbitControls } from 'three/addons/controls/OrbitControls.js';
JS
npx esbuild entry.js --bundle --minify --format=iife --global-name=THREE --legal-comments=none \
    --outfile=three.bundle.min.js --log-level=warning
mkdir -p "$ROOT/web/vendor"
{
    echo "/* three.js ${VERSION} (https://threejs.org), MIT License (see three.LICENSE): the names listed in"
    echo "   scripts/vendor_three.sh, bundled by esbuild $ESBUILD. */"
    cat three.bundle.min.js
} > "$ROOT/web/vendor/three.bundle.min.js"
cp node_modules/three/LICENSE "$ROOT/web/vendor/three.LICENSE"
echo "wrote web/vendor/three.bundle.min.js ($(wc -c < "$ROOT/web/vendor/three.bundle.min.js") bytes) and web/vendor/three.LICENSE"
