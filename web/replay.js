// The replay page of `cenic view` (src/view.rs inlines this file, the
// vendored three.js bundle and the trajectory data into one HTML file).
//
// Data (JSON in <script id="cenic-data">): geoms (kind, size, body, pos,
// quat, rgba, checker, mesh), nbody, center and extent (m), and tracks
// (label, group, times (s), poses: per sample and body px py pz qw qx qy qz).
// Side by side, each group is one copy of the scene (its tracks overlaid);
// overlaid, every track shares one. Tracks after the first of their copy
// are translucent.
// Controls: play/pause, a time slider, speed, side-by-side or overlaid
// worlds, an orbit camera (drag, wheel). The URL's hash sets the start:
// #t=1.5 (paused at that time), #layout=overlay, #size=640x480 (a fixed
// canvas size), #view=90,-30,2 (camera azimuth and elevation in degrees,
// distance in m, as MuJoCo's free camera), combined as #t=1.5&layout=overlay.
//
// For tests, <pre id="probe"> holds after each drawn frame the time, the
// samples shown and the screen position (CSS pixels) of each track's
// moving body origins; <pre id="status"> says "ready" or the error.
(function () {
  'use strict';
  const status = document.getElementById('status');
  try {
    main();
  } catch (e) {
    status.textContent = 'error: ' + (e && e.stack ? e.stack : e);
    throw e;
  }

  function main() {
    const data = JSON.parse(document.getElementById('cenic-data').textContent);
    const T = THREE;
    const tracks = data.tracks;
    if (!tracks.length) throw new Error('no trajectory to show');
    const nb = data.nbody;
    const extent = data.extent;
    const t0 = Math.min(...tracks.map((k) => k.times[0]));
    const t1 = Math.max(...tracks.map((k) => k.times[k.times.length - 1]));

    const renderer = new T.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    renderer.setPixelRatio(1);
    renderer.outputColorSpace = T.SRGBColorSpace;
    document.body.appendChild(renderer.domElement);
    const scene = new T.Scene();
    scene.background = new T.Color(0.32, 0.42, 0.52);
    scene.add(new T.HemisphereLight(0xffffff, 0x404040, 1.6));
    const sun = new T.DirectionalLight(0xffffff, 1.6);
    sun.position.set(0.3, -0.5, 1);
    scene.add(sun);

    const camera = new T.PerspectiveCamera(45, 1, 0.01 * extent, 100 * extent);
    camera.up.set(0, 0, 1);
    const controls = new T.OrbitControls(camera, renderer.domElement);

    function checkerTexture(rgb1, rgb2, repeat, size) {
      const c = document.createElement('canvas');
      c.width = c.height = 2;
      const g = c.getContext('2d');
      const css = (v) => 'rgb(' + v.map((x) => Math.round(255 * x)).join(',') + ')';
      g.fillStyle = css(rgb1);
      g.fillRect(0, 0, 2, 2);
      g.fillStyle = css(rgb2);
      g.fillRect(1, 0, 1, 1);
      g.fillRect(0, 1, 1, 1);
      const tex = new T.CanvasTexture(c);
      tex.magFilter = T.NearestFilter;
      tex.wrapS = tex.wrapT = T.RepeatWrapping;
      tex.repeat.set((repeat[0] * size[0]) / 2, (repeat[1] * size[1]) / 2);
      tex.colorSpace = T.SRGBColorSpace;
      return tex;
    }

    function geometry(g) {
      const s = g.size;
      switch (g.kind) {
        case 'plane': {
          const sx = s[0] > 0 ? s[0] : 50 * extent;
          const sy = s[1] > 0 ? s[1] : 50 * extent;
          return [new T.PlaneGeometry(2 * sx, 2 * sy), [2 * sx, 2 * sy]];
        }
        case 'sphere':
          return [new T.SphereGeometry(s[0], 28, 16)];
        case 'ellipsoid': {
          const e = new T.SphereGeometry(1, 28, 16);
          e.scale(s[0], s[1], s[2]);
          return [e];
        }
        case 'capsule': {
          const c = new T.CapsuleGeometry(s[0], 2 * s[1], 8, 28);
          c.rotateX(Math.PI / 2);
          return [c];
        }
        case 'cylinder': {
          const c = new T.CylinderGeometry(s[0], s[0], 2 * s[1], 28);
          c.rotateX(Math.PI / 2);
          return [c];
        }
        case 'box':
          return [new T.BoxGeometry(2 * s[0], 2 * s[1], 2 * s[2])];
        default: {
          // Meshes and height fields come as triangles.
          const b = new T.BufferGeometry();
          const v = g.mesh.v;
          const pos = [];
          for (const i of g.mesh.f) pos.push(v[3 * i], v[3 * i + 1], v[3 * i + 2]);
          b.setAttribute('position', new T.Float32BufferAttribute(pos, 3));
          b.computeVertexNormals();
          return [b];
        }
      }
    }

    // One copy of the bodies per track; static geoms once per track side by side, planes once.
    const copies = [];
    const shared = new T.Group();
    scene.add(shared);
    tracks.forEach((track, k) => {
      const root = new T.Group();
      const bodies = [];
      const moving = [];
      for (let b = 0; b < nb; b++) {
        const body = new T.Group();
        root.add(body);
        bodies.push(body);
      }
      for (const g of data.geoms) {
        if (g.kind === 'plane' && k > 0) continue;
        const [geo, planeSize] = geometry(g);
        const mat = new T.MeshLambertMaterial({
          color: new T.Color(g.rgba[0], g.rgba[1], g.rgba[2]),
          transparent: g.rgba[3] < 1,
          opacity: g.rgba[3],
          side: T.DoubleSide,
        });
        if (g.body > 0) moving.push([mat, g.rgba[3], mat.color.clone()]);
        if (g.checker) {
          mat.color = new T.Color(1, 1, 1);
          mat.map = checkerTexture(g.rgba.slice(0, 3), g.checker.slice(0, 3), g.checker.slice(3, 5), planeSize);
        }
        const mesh = new T.Mesh(geo, mat);
        mesh.position.set(g.pos[0], g.pos[1], g.pos[2]);
        mesh.quaternion.set(g.quat[1], g.quat[2], g.quat[3], g.quat[0]);
        (g.kind === 'plane' ? shared : bodies[g.body]).add(mesh);
      }
      scene.add(root);
      copies.push({ root, bodies, moving, group: track.group });
    });

    // Controls.
    const play = document.getElementById('play');
    const slider = document.getElementById('time');
    const clock = document.getElementById('clock');
    const speed = document.getElementById('speed');
    const layout = document.getElementById('layout');
    slider.min = t0;
    slider.max = t1;
    slider.step = (t1 - t0) / 1000 || 1;
    let time = t0;
    let playing = true;
    const hash = new URLSearchParams(location.hash.slice(1));
    layout.value = hash.get('layout') || data.layout;

    const ngroup = Math.max(...tracks.map((k) => k.group)) + 1;
    const ORANGE = new T.Color(1.0, 0.45, 0.05);
    function arrange() {
      const side = layout.value === 'side' && ngroup > 1;
      const spacing = 1.2 * extent;
      copies.forEach((c, k) => {
        c.root.position.set(side ? (c.group - (ngroup - 1) / 2) * spacing : 0, 0, 0);
        // Translucent and tinted orange unless first in its copy of the scene.
        const first = side ? copies.findIndex((o) => o.group === c.group) === k : k === 0;
        for (const [mat, alpha, color] of c.moving) {
          mat.transparent = alpha < 1 || !first;
          mat.opacity = alpha * (first ? 1 : 0.6);
          mat.color.copy(color);
          if (!first && !mat.map) mat.color.lerp(ORANGE, 0.6);
          mat.needsUpdate = true;
        }
      });
      const span = side ? (ngroup - 1) * spacing : 0;
      const v = (hash.get('view') || '').split(',').map(parseFloat);
      const d = v[2] > 0 ? v[2] : 1.5 * extent + 0.6 * span;
      const az = ((Number.isFinite(v[0]) ? v[0] : 90) * Math.PI) / 180;
      const el = ((Number.isFinite(v[1]) ? v[1] : -30) * Math.PI) / 180;
      const c = data.center;
      controls.target.set(c[0], c[1], c[2]);
      camera.position.set(c[0] - d * Math.cos(el) * Math.cos(az), c[1] - d * Math.cos(el) * Math.sin(az), c[2] - d * Math.sin(el));
      controls.update();
    }
    arrange();
    layout.addEventListener('change', () => {
      arrange();
      draw();
    });

    // The sample of `track` shown at time t: the last one at or before t.
    function sampleAt(track, t) {
      const ts = track.times;
      let lo = 0;
      let hi = ts.length - 1;
      if (t <= ts[0]) return 0;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (ts[mid] <= t + 1e-9) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    }

    const shown = new Array(tracks.length).fill(0);
    function pose() {
      tracks.forEach((track, k) => {
        const s = sampleAt(track, time);
        shown[k] = s;
        const p = track.poses;
        const base = s * nb * 7;
        for (let b = 1; b < nb; b++) {
          const o = base + 7 * b;
          const body = copies[k].bodies[b];
          body.position.set(p[o], p[o + 1], p[o + 2]);
          body.quaternion.set(p[o + 4], p[o + 5], p[o + 6], p[o + 3]);
        }
      });
    }

    const probe = document.getElementById('probe');
    function draw() {
      pose();
      slider.value = time;
      clock.textContent = time.toFixed(3) + ' s';
      renderer.render(scene, camera);
      const w = renderer.domElement.clientWidth;
      const h = renderer.domElement.clientHeight;
      const screen = copies.map((c) =>
        c.bodies.slice(1).map((body) => {
          const v = new T.Vector3();
          body.getWorldPosition(v);
          v.project(camera);
          return [Math.round(((v.x + 1) / 2) * w), Math.round(((1 - v.y) / 2) * h)];
        }),
      );
      probe.textContent = JSON.stringify({ t: time, samples: shown, bodies: screen, layout: layout.value, size: [w, h] });
    }

    // #size=WxH fixes the canvas (CSS pixels) whatever the window: the same picture in every run.
    const fixed = (hash.get('size') || '').match(/^(\d+)x(\d+)$/);
    function resize() {
      const w = fixed ? parseInt(fixed[1], 10) : window.innerWidth;
      const h = fixed ? parseInt(fixed[2], 10) : window.innerHeight;
      renderer.setSize(w, h);
      camera.aspect = w / h;
      camera.updateProjectionMatrix();
      draw();
    }
    window.addEventListener('resize', resize);

    play.addEventListener('click', () => {
      playing = !playing;
      play.textContent = playing ? 'Pause' : 'Play';
      last = performance.now();
    });
    slider.addEventListener('input', () => {
      time = parseFloat(slider.value);
      draw();
    });
    controls.addEventListener('change', draw);

    if (hash.has('t')) {
      playing = false;
      play.textContent = 'Play';
      slider.value = Math.min(t1, Math.max(t0, parseFloat(hash.get('t'))));
      slider.dispatchEvent(new Event('input'));
    }
    resize();

    let last = performance.now();
    function tick(now) {
      if (playing) {
        time += ((now - last) / 1000) * parseFloat(speed.value);
        if (time > t1) time = t0;
        draw();
      }
      last = now;
      requestAnimationFrame(tick);
    }
    requestAnimationFrame(tick);
    status.textContent = 'ready: ' + tracks.length + ' tracks, ' + data.geoms.length + ' geoms, t ' + t0 + '..' + t1 + ' s';
  }
})();
