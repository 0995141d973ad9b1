// ---- board.js: the Ludo board of every page, in SVG (docs/rules.md#the-board).
// A page imports `LudoBoard`; its style is web/css/board.css. `LudoBoard.geometry` (where
// each square lies) is pure, and nothing here touches the DOM until `create` is called.
//
//   const board = LudoBoard.create(svg, model, { bottom: 0, labels: {...}, onPiece });
//   board.setPieces(pieces); board.setMovable(seat, moves, onPick, { chosen });
//   board.setLastMove(seat, piece); await board.animateMove(move, { stepMs });
//   board.cellOf(seat, p); board.destroy();
//
// `model` is the server's board model (docs/api.md, getReplaySteps `board`). The grid is
// the classic 15×15 cross: one arm is 3 columns × 6 squares, the centre 3×3 the goal.
// An arm is laid out once, as the bottom arm (its start at track index S = 13·a):
//   S-8 … S-3: column 8, rows 9 … 14 (coming in, downwards); S-2: the tip (14, 7);
//   S-1: (14, 6); S … S+4: column 6, rows 13 … 9 (going out, upwards);
//   home column: column 7, rows 13 … 9; nest: the bottom-left 6×6 corner.
// and turned a quarter clockwise per arm (bottom → left → top → right), so pieces move
// clockwise on screen. Coordinates are rotated, never the symbols or text.
export const LudoBoard = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const U = 40;  // one grid cell in SVG user units
  const SYMBOL = { yellow: "○", blue: "□", red: "△", green: "✚" };
  // by_players: the screen slot (0 bottom, 1 left, 2 top, 3 right) of each arm.
  const SLOTS = { 2: [1, 3], 3: [0, 1, 3], 4: [0, 1, 2, 3] };
  const reducedMotion = () =>
    typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;

  function make(parent, tag, attrs, text) {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) n.setAttribute(k, String(v));
    }
    if (text !== undefined && text !== null) n.textContent = text;
    if (parent) parent.appendChild(n);
    return n;
  }
  const f = (x) => Math.round(x * 100) / 100;

  // A point (x, y) in cell units turned q quarter-turns clockwise about the centre.
  function turn(x, y, q) {
    let dx = x - 7.5, dy = y - 7.5;
    for (let i = 0; i < ((q % 4) + 4) % 4; i++) [dx, dy] = [-dy, dx];
    return [7.5 + dx, 7.5 + dy];
  }
  function turnCell(row, col, q) {
    const [x, y] = turn(col + 0.5, row + 0.5, q);
    return { row: Math.round(y - 0.5), col: Math.round(x - 0.5) };
  }
  const centre = (cell) => ({ x: (cell.col + 0.5) * U, y: (cell.row + 0.5) * U });

  // The owner's symbol as shapes centred on (0, 0), r about 0.23 cells (scaled by `k`).
  function symbol(parent, colour, k, cls) {
    const r = 0.23 * U * k;
    const c = `sym ${cls || ""}`.trim();
    if (colour === "yellow") return make(parent, "circle", { r: f(r * 0.9), class: c });
    if (colour === "blue") {
      const s = r * 0.8;
      return make(parent, "rect", { x: f(-s), y: f(-s), width: f(2 * s), height: f(2 * s),
                                    class: c });
    }
    if (colour === "red") {
      return make(parent, "path", {
        d: `M0 ${f(-r)}L${f(r * 0.95)} ${f(r * 0.68)}L${f(-r * 0.95)} ${f(r * 0.68)}Z`,
        class: c,
      });
    }
    if (colour === "green") {
      const a = r * 0.33, b = r * 1.05;
      return make(parent, "path", {
        d: `M${f(-a)} ${f(-b)}H${f(a)}V${f(-a)}H${f(b)}V${f(a)}H${f(a)}V${f(b)}H${f(-a)}` +
           `V${f(a)}H${f(-b)}V${f(-a)}H${f(-a)}Z`,
        class: `${c} solid`,
      });
    }
    return null;
  }

  function star(parent, x, y, r, attrs) {
    let d = "";
    for (let i = 0; i < 10; i++) {
      const a = -Math.PI / 2 + (i * Math.PI) / 5;
      const rr = i % 2 ? r * 0.42 : r;
      d += `${i ? "L" : "M"}${f(x + rr * Math.cos(a))} ${f(y + rr * Math.sin(a))}`;
    }
    return make(parent, "path", { d: d + "Z", ...attrs });
  }

  // ------------------------------------------------------------------ geometry
  function geometry(model, bottom) {
    const L = model.length;
    const arms = Math.round(L / 13);
    const by = model.kind === "by_players";
    const slots = by ? SLOTS[arms] : [0, 1, 2, 3];
    const owner = [];
    for (let a = 0; a < arms; a++) owner.push(by ? a : model.colour_index.indexOf(a));
    // The arm to draw at the bottom; a 2-player by_players board stays horizontal (its
    // arm goes right, nest in the bottom-right corner).
    const wanted = by ? model.colour_index.indexOf(bottom) : bottom;
    let rotation = 0;
    if (Number.isInteger(wanted) && wanted >= 0 && wanted < arms) {
      rotation = by && arms === 2 ? (slots[wanted] === 3 ? 0 : 2) : (4 - slots[wanted]) % 4;
    }
    const track = new Array(L);
    const armList = [];
    for (let a = 0; a < arms; a++) {
      const q = (slots[a] + rotation) % 4;
      const S = 13 * a;
      const put = (i, r, c) => { track[((i % L) + L) % L] = turnCell(r, c, q); };
      for (let j = 0; j < 6; j++) put(S - 8 + j, 9 + j, 8);
      put(S - 2, 14, 7);
      put(S - 1, 14, 6);
      for (let j = 0; j < 5; j++) put(S + j, 13 - j, 6);
      const home = [];
      for (let k = 0; k < 5; k++) home.push(turnCell(13 - k, 7, q));
      const [x0, y0] = turn(0, 9, q), [x1, y1] = turn(6, 15, q);
      const nest = { x0: Math.min(x0, x1), y0: Math.min(y0, y1),
                     x1: Math.max(x0, x1), y1: Math.max(y0, y1) };
      if (by && arms === 2) {  // a long board: the nests shallower
        if (nest.y1 <= 6.01) nest.y0 = 6 - 4.2; else nest.y1 = 9 + 4.2;
      }
      const seat = owner[a];
      armList.push({ arm: a, q, seat, colour: seat >= 0 ? model.colours[seat] : null,
                     start: S, home, nest });
    }
    const bySeat = [];
    for (const arm of armList) if (arm.seat >= 0) bySeat[arm.seat] = arm;
    // Bridges of a by_players board with a missing arm: from an arm's last square to the
    // next arm's first (no squares between them).
    const bridges = [];
    for (let a = 0; a < arms && arms < 4; a++) {
      const b = (a + 1) % arms;
      if ((slots[a] + 1) % 4 !== slots[b]) bridges.push([(13 * a + 4) % L, (13 * b - 8 + L) % L]);
    }
    const occupied = new Set(armList.map((arm) => arm.q));
    const top = by && arms === 2 ? 1.6 : 0, height = by && arms === 2 ? 11.8 : 15;
    return { L, armCount: arms, by, rotation, track, arms: armList, bySeat, bridges, occupied,
             viewBox: [0, top * U, 15 * U, height * U] };
  }

  // ------------------------------------------------------------------ create
  function create(svg, model, options) {
    const opts = options || {};
    const labels = opts.labels || {};
    const onPiece = opts.onPiece || null;  // (seat, piece): a press on a piece that is no move
    const geo = geometry(model, opts.bottom === undefined || opts.bottom === null ? 0 : opts.bottom);
    const nSeats = model.colours.length;
    const pieceCount = model.pieces || 4;
    let pieces = model.colours.map(() => new Array(pieceCount).fill(-1));
    let movable = null;   // {seat, moves, onPick, chosen}
    let lastMove = null;  // [seat, piece]
    let generation = 0;   // bumped to cancel a running animation
    const tokens = [];    // tokens[seat][piece]: the <g class="piece">

    const where = (p) => {
      if (p < 0) return "in the nest";
      if (p >= model.goal) return "in the goal";
      if (p >= model.home) return `on home square ${p - model.home + 1}`;
      return `on square ${p}`;
    };
    const pieceLabel = labels.piece || ((colour, piece, p) =>
      `${colour} ${SYMBOL[colour] || ""} piece ${piece + 1}, ${where(p)}`);
    const moveLabel = labels.move || ((colour, move) =>
      `move ${colour} ${SYMBOL[colour] || ""} piece ${move.piece + 1} from ${where(move.from)}` +
      ` to ${where(move.to)}${move.captures && move.captures.length ? ", capturing" : ""}`);

    svg.textContent = "";
    svg.setAttribute("viewBox", geo.viewBox.join(" "));
    svg.setAttribute("role", "group");
    svg.setAttribute("aria-label", labels.board || "Ludo board");
    svg.classList.add("ludo-board");
    const root = make(svg, "g", { class: "lb" });
    const cellsLayer = make(root, "g", { class: "lb-cells" });
    const goalLayer = make(root, "g", { class: "lb-goal" });
    const bridgeLayer = make(root, "g", { class: "lb-bridges" });
    const targetLayer = make(root, "g", { class: "lb-targets" });
    // The reach of movable pieces lies under every piece, so that a piece's own body is
    // always what a press on it meets.
    const reachLayer = make(root, "g", { class: "lb-reach" });
    // A movable piece's mark lies under it too: the piece itself holds still while its
    // ring pulses (a tool that waits for a button to stop moving can press it).
    const ringLayer = make(root, "g", { class: "lb-rings" });
    const pieceLayer = make(root, "g", { class: "lb-pieces" });
    const badgeLayer = make(root, "g", { class: "lb-badges" });

    // ---- static drawing
    for (const arm of geo.arms) {
      const c = arm.colour ? `c-${arm.colour}` : "neutral";
      const n = arm.nest, inset = 0.2;
      const g = make(cellsLayer, "g", { class: `nest ${c}`, "data-nest": arm.seat >= 0 ? arm.seat : null });
      make(g, "rect", { x: (n.x0 + inset) * U, y: (n.y0 + inset) * U,
                        width: (n.x1 - n.x0 - 2 * inset) * U, height: (n.y1 - n.y0 - 2 * inset) * U,
                        rx: 0.4 * U, class: "nest-bg" });
      const cx = ((n.x0 + n.x1) / 2) * U, cy = ((n.y0 + n.y1) / 2) * U;
      make(g, "rect", { x: (n.x0 + 0.8) * U, y: (n.y0 + 0.8) * U, width: (n.x1 - n.x0 - 1.6) * U,
                        height: (n.y1 - n.y0 - 1.6) * U, rx: 0.3 * U, class: "nest-in" });
      if (arm.colour) {
        const s = make(g, "g", { transform: `translate(${f(cx)} ${f(cy)})`, class: "nest-sym" });
        symbol(s, arm.colour, 1.6);
      }
      for (let i = 0; i < 4; i++) {
        const p = nestSpot(arm, i);
        make(g, "circle", { cx: f(p.x), cy: f(p.y), r: 0.5 * U, class: "spot" });
      }
      arm.home.forEach((cell, k) => {
        const attrs = { x: cell.col * U, y: cell.row * U, width: U, height: U,
                        class: `cell home ${c}`, "data-row": cell.row, "data-col": cell.col };
        if (arm.seat >= 0) attrs["data-home"] = `${arm.seat}:${k}`;
        make(cellsLayer, "rect", attrs);
        if (arm.colour) {
          const p = centre(cell);
          const s = make(cellsLayer, "g", { transform: `translate(${p.x} ${p.y})`, class: "home-sym" });
          symbol(s, arm.colour, 1);
        }
      });
    }
    const startOf = new Map(geo.arms.filter((a) => a.seat >= 0).map((a) => [a.start, a]));
    const safe = new Set(model.safe);
    geo.track.forEach((cell, i) => {
      const arm = startOf.get(i);
      let cls = "cell track";
      if (safe.has(i)) cls += " safe";
      if (arm) cls += ` start c-${arm.colour}`;
      make(cellsLayer, "rect", { x: cell.col * U, y: cell.row * U, width: U, height: U, class: cls,
                                 "data-track": i, "data-row": cell.row, "data-col": cell.col });
      const p = centre(cell);
      if (arm) {
        // an arrow along the direction of travel out of the start square
        const next = centre(geo.track[(i + 1) % geo.L]);
        const ang = (Math.atan2(next.y - p.y, next.x - p.x) * 180) / Math.PI;
        make(cellsLayer, "path", {
          d: `M${-0.3 * U} ${-0.2 * U}L${0.05 * U} 0L${-0.3 * U} ${0.2 * U}M0 ${-0.25 * U}` +
             `L${0.32 * U} 0L0 ${0.25 * U}`,
          class: "start-arrow", "data-track": i,
          transform: `translate(${p.x} ${p.y}) rotate(${f(ang)})`,
        });
      } else if (safe.has(i)) {
        star(cellsLayer, p.x, p.y, 0.36 * U, { class: "star", "data-track": i });
      }
    });
    // the goal: one triangle per side, in the colour of that side's arm
    for (let q = 0; q < 4; q++) {
      const arm = geo.arms.find((a) => a.q === q);
      const pts = [[6, 9], [9, 9], [7.5, 7.5]].map(([x, y]) => turn(x, y, q));
      const cls = arm ? (arm.colour ? `c-${arm.colour}` : "neutral") : "absent";
      make(goalLayer, "path", {
        d: "M" + pts.map(([x, y]) => `${f(x * U)} ${f(y * U)}`).join("L") + "Z",
        class: `goal-tri ${cls}`, "data-goal": arm && arm.seat >= 0 ? arm.seat : null,
      });
    }
    make(goalLayer, "rect", { x: 6 * U, y: 6 * U, width: 3 * U, height: 3 * U, class: "goal" });
    for (const [from, to] of geo.bridges) {
      const a = centre(geo.track[from]), b = centre(geo.track[to]);
      const mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2;
      const ox = mx - 7.5 * U, oy = my - 7.5 * U, len = Math.hypot(ox, oy) || 1;
      const bulge = 1.3 * U;
      const cx = mx + (ox / len) * bulge, cy = my + (oy / len) * bulge;
      const edge = (p) => {  // from p 0.45 cells towards the control point
        const dx = cx - p.x, dy = cy - p.y, d = Math.hypot(dx, dy);
        return { x: p.x + (dx / d) * 0.45 * U, y: p.y + (dy / d) * 0.45 * U };
      };
      const s = edge(a), e = edge(b);
      const g = make(bridgeLayer, "g", { class: "bridge", "data-from": from, "data-to": to });
      make(g, "path", { d: `M${f(s.x)} ${f(s.y)}Q${f(cx)} ${f(cy)} ${f(e.x)} ${f(e.y)}`,
                        class: "bridge-line" });
      const ang = Math.atan2(e.y - cy, e.x - cx), h = 0.4 * U;
      const p1 = [e.x - h * Math.cos(ang - 0.5), e.y - h * Math.sin(ang - 0.5)];
      const p2 = [e.x - h * Math.cos(ang + 0.5), e.y - h * Math.sin(ang + 0.5)];
      make(g, "path", { d: `M${f(e.x)} ${f(e.y)}L${f(p1[0])} ${f(p1[1])}L${f(p2[0])} ${f(p2[1])}Z`,
                        class: "bridge-head" });
    }

    function nestSpot(arm, i) {
      const n = arm.nest;
      const cx = ((n.x0 + n.x1) / 2) * U, cy = ((n.y0 + n.y1) / 2) * U;
      const dx = Math.min(1.25, (n.x1 - n.x0 - 1.6) / 2 - 0.7) * U;
      const dy = Math.min(1.25, (n.y1 - n.y0 - 1.6) / 2 - 0.7) * U;
      return { x: cx + (i % 2 ? dx : -dx), y: cy + (i < 2 ? -dy : dy) };
    }

    function cellOf(seat, p) {
      const arm = geo.bySeat[seat];
      if (p < 0) {
        const n = arm.nest;
        return { x: ((n.x0 + n.x1) / 2) * U, y: ((n.y0 + n.y1) / 2) * U, kind: "nest", index: seat };
      }
      if (p >= model.goal) {
        const [x, y] = turn(7.5, 8.55, arm.q);
        return { x: x * U, y: y * U, kind: "goal", index: seat };
      }
      if (p >= model.home) {
        const cell = arm.home[p - model.home];
        return { ...centre(cell), kind: "home", index: p - model.home, row: cell.row, col: cell.col };
      }
      const index = (model.starts[seat] + p) % geo.L;
      const cell = geo.track[index];
      return { ...centre(cell), kind: "track", index, row: cell.row, col: cell.col };
    }

    // ---- tokens
    for (let seat = 0; seat < nSeats; seat++) {
      const colour = model.colours[seat];
      tokens.push([]);
      for (let i = 0; i < pieceCount; i++) {
        const g = make(pieceLayer, "g", { class: `piece c-${colour}`, "data-seat": seat,
                                          "data-piece": i, "data-progress": -1,
                                          "data-symbol": SYMBOL[colour] || "" });
        const inner = make(g, "g", { class: "tok" });
        make(inner, "circle", { r: 0.5 * U, class: "hit" });
        make(inner, "circle", { r: 0.42 * U, class: "body" });
        symbol(inner, colour, 1);
        g._reach = make(reachLayer, "circle", { r: 0.5 * U, class: "reach", "data-seat": seat,
                                                "data-piece": i });  // see reachRadius
        // A movable piece's mark: a dark ring around a white one, pulsing where motion
        // is welcome; seen on any colour and by shape, not by colour alone.
        g._rings = make(ringLayer, "g", { class: "rings", "data-seat": seat, "data-piece": i });
        const pulse = make(g._rings, "g", { class: "pulse" });
        make(pulse, "circle", { r: 0.64 * U, class: "ring" });
        make(pulse, "circle", { r: 0.64 * U, class: "ring inner" });
        tokens[seat].push(g);
      }
    }
    const place = (g, x, y, scale) => {
      const at = `translate(${f(x)} ${f(y)})`, size = scale === 1 ? "" : `scale(${f(scale)})`;
      if (g.getAttribute("transform") !== at) g.setAttribute("transform", at);
      if (g.firstChild.getAttribute("transform") !== size) g.firstChild.setAttribute("transform", size);
      g._at = { x, y, scale };
      if (g._reach.getAttribute("transform") !== at) g._reach.setAttribute("transform", at);
      const ring = size ? `${at} ${size}` : at;
      if (g._rings.getAttribute("transform") !== ring) g._rings.setAttribute("transform", ring);
    };

    // Where every token goes: stacks fanned in their cell, a badge per colour of ≥ 2.
    function layout() {
      const spots = new Map();  // "seat:piece" → {x, y, scale}
      const badges = [];
      const groups = new Map();
      pieces.forEach((row, seat) => row.forEach((p, i) => {
        if (p < 0) {
          spots.set(`${seat}:${i}`, { ...nestSpot(geo.bySeat[seat], i), scale: 1 });
          return;
        }
        const c = cellOf(seat, p);
        const key = c.kind === "goal" ? `g${seat}` : c.kind === "home" ? `h${seat}:${c.index}`
          : `t${c.index}`;
        if (!groups.has(key)) groups.set(key, { cell: c, seat, list: [] });
        groups.get(key).list.push([seat, i]);
      }));
      for (const { cell, seat: owner, list } of groups.values()) {
        const n = list.length;
        const counts = new Map();
        for (const [s] of list) counts.set(s, (counts.get(s) || 0) + 1);
        if (cell.kind === "goal") {
          // two rows of two in the colour's triangle
          const q = geo.bySeat[owner].q;
          list.forEach(([s, i], k) => {
            const [x, y] = turn(7.5 + (k % 2 ? 0.24 : -0.24) * (n === 1 ? 0 : 1),
                                n <= 2 ? 8.62 : k < 2 ? 8.4 : 8.8, q);
            spots.set(`${s}:${i}`, { x: x * U, y: y * U, scale: 0.46 });
          });
          if (n >= 2) {
            const [x, y] = turn(7.5, 7.98, q);
            badges.push({ x: x * U, y: y * U, seat: owner, count: n, cell: `goal:${owner}` });
          }
          continue;
        }
        const grid = n === 1 ? 1 : n <= 4 ? 2 : n <= 9 ? 3 : 4;
        const scale = [1, 0.58, 0.42, 0.32][grid - 1];
        const step = U / grid;
        list.forEach(([s, i], k) => {
          const gx = k % grid, gy = n === 2 ? 0.5 : Math.floor(k / grid);  // a pair side by side
          spots.set(`${s}:${i}`, { x: cell.x + (gx - (grid - 1) / 2) * step,
                                   y: cell.y + (gy - (grid - 1) / 2) * step, scale });
        });
        let b = 0;
        for (const [s, count] of counts) {
          if (count < 2) continue;
          const idx = list.findIndex(([ss]) => ss === s) + count - 1;
          const at = spots.get(`${list[idx][0]}:${list[idx][1]}`);
          badges.push({ x: at.x + 0.2 * U * (grid === 2 ? 1.2 : 1), y: at.y - 0.2 * U,
                        seat: s, count, cell: `${cell.kind}:${cell.index}`, b: b++ });
        }
      }
      return { spots, badges };
    }

    function render() {
      const { spots, badges } = layout();
      pieces.forEach((row, seat) => row.forEach((p, i) => {
        const g = tokens[seat][i];
        const at = spots.get(`${seat}:${i}`);
        place(g, at.x, at.y, at.scale);
        g.setAttribute("data-progress", p);
      }));
      badgeLayer.textContent = "";
      for (const b of badges) {
        const colour = model.colours[b.seat];
        const g = make(badgeLayer, "g", { class: `count c-${colour}`, "data-seat": b.seat,
                                          "data-cell": b.cell, "data-count": b.count,
                                          transform: `translate(${f(b.x)} ${f(b.y)})` });
        make(g, "circle", { r: 0.19 * U });
        make(g, "text", { y: 0.01 * U }, String(b.count));
      }
      decorate();
    }

    // A movable piece answers a press within this radius of its centre (user units): at
    // least 22 CSS px, a 44 px target, even where the board is drawn small (on a phone a
    // square is about 24 px wide).
    function reachRadius() {
      const m = svg.getScreenCTM && svg.getScreenCTM();
      return m && m.a > 0 ? Math.max(0.5 * U, 22 / m.a + 0.5) : 0.5 * U;
    }

    // classes, focus and labels of the tokens; the move targets
    function decorate() {
      const byPiece = new Map();
      if (movable) for (const m of movable.moves) byPiece.set(m.piece, m);
      const choosing = !!movable && !!movable.onPick;
      const reach = choosing ? f(reachRadius()) : 0;
      tokens.forEach((row, seat) => row.forEach((g, i) => {
        const move = movable && movable.seat === seat ? byPiece.get(i) : undefined;
        const colour = model.colours[seat];
        g.classList.toggle("movable", !!move);
        g.classList.toggle("idle", choosing && movable.seat === seat && !move);
        g.classList.toggle("moved", !!lastMove && lastMove[0] === seat && lastMove[1] === i);
        g.classList.toggle("chosen", !!move && movable.chosen === i);
        g._reach.classList.toggle("on", !!move && choosing);
        g._rings.classList.toggle("on", !!move);
        g._rings.classList.toggle("chosen", !!move && movable.chosen === i);
        if (move && choosing) g._reach.setAttribute("r", reach);
        const p = pieces[seat][i];
        if (move && movable.onPick) {
          g.setAttribute("tabindex", "0");
          g.setAttribute("role", "button");
          g.setAttribute("aria-label", moveLabel(colour, move));
        } else {
          g.removeAttribute("tabindex");
          g.setAttribute("role", "img");
          g.setAttribute("aria-label", pieceLabel(colour, i, p));
        }
      }));
      targetLayer.textContent = "";
      if (!movable) return;
      for (const m of movable.moves) {
        const c = cellOf(movable.seat, m.to);
        const w = c.kind === "goal" ? 0.8 * U : c.kind === "nest" ? 1.2 * U : 0.84 * U;
        make(targetLayer, "rect", {
          x: f(c.x - w / 2), y: f(c.y - w / 2), width: f(w), height: f(w), rx: 0.12 * U,
          class: `target${movable.chosen === m.piece ? " chosen" : ""}`,
          "data-seat": movable.seat, "data-piece": m.piece, "data-to": m.to,
        });
      }
    }

    // ---- presses. A press is read by where it lands on the board, not by which element
    // got it (the reach circles overlap on a small board): in order, an own movable
    // piece under it, a move's target square under it (a capture: the opponent there),
    // any piece under it (`onPiece`: the page asks why it cannot move), else the nearest
    // movable piece or target within reach.
    // Where a press landed, in board units; null for a click without a place (one that
    // assistive technology sends to a focused piece): then its element says which piece.
    function pointOf(e) {
      const m = svg.getScreenCTM && svg.getScreenCTM();
      if (!m || !Number.isFinite(e.clientX) || (e.clientX === 0 && e.clientY === 0)) return null;
      return new DOMPoint(e.clientX, e.clientY).matrixTransform(m.inverse());
    }
    function pieceOf(element) {
      const g = element && element.closest && element.closest(".lb-pieces .piece, .lb-reach .reach");
      return g && svg.contains(g) ? { seat: Number(g.dataset.seat), piece: Number(g.dataset.piece) } : null;
    }
    function pieceUnder(p) {
      let best = null, bestD = Infinity;
      tokens.forEach((row, seat) => row.forEach((g, piece) => {
        const at = g._at, d = Math.hypot(at.x - p.x, at.y - p.y);
        if (d <= 0.5 * U * at.scale && d < bestD) { best = { seat, piece }; bestD = d; }
      }));
      return best;
    }
    function moveFor(p, piece) {
      if (!movable || !movable.onPick) return null;
      const moves = movable.moves;
      if (piece && piece.seat === movable.seat) {
        const own = moves.find((m) => m.piece === piece.piece);
        if (own) return own;
      }
      if (!p) return null;
      const onTarget = moves.find((m) => {
        const c = cellOf(movable.seat, m.to);
        return Math.abs(c.x - p.x) <= 0.5 * U && Math.abs(c.y - p.y) <= 0.5 * U;
      });
      if (onTarget || piece) return onTarget || null;
      let best = null, bestD = reachRadius();
      for (const m of moves) {
        for (const c of [tokens[movable.seat][m.piece]._at, cellOf(movable.seat, m.to)]) {
          const d = Math.hypot(c.x - p.x, c.y - p.y);
          if (d <= bestD) { best = m; bestD = d; }
        }
      }
      return best;
    }
    const onClick = (e) => {
      const p = pointOf(e);
      const piece = p ? pieceUnder(p) : pieceOf(e.target);
      const move = moveFor(p, piece);
      if (move) {
        e.preventDefault();
        movable.onPick(move.piece);
      } else if (piece && onPiece) {
        e.preventDefault();
        onPiece(piece.seat, piece.piece);
      }
    };
    const onKey = (e) => {
      if (e.key !== "Enter" && e.key !== " " && e.key !== "Spacebar") return;
      const g = e.target && e.target.closest && e.target.closest(".lb-pieces .piece.movable");
      if (g && svg.contains(g) && movable && movable.onPick && Number(g.dataset.seat) === movable.seat) {
        e.preventDefault();
        movable.onPick(Number(g.dataset.piece));
      }
    };
    svg.addEventListener("click", onClick);
    svg.addEventListener("keydown", onKey);
    // The reach is in screen pixels: a board drawn at another size needs it again.
    const resized = typeof ResizeObserver === "function" ? new ResizeObserver(() => decorate()) : null;
    if (resized) resized.observe(svg);

    // ---- animation
    const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
    async function glide(g, to, ms, gen) {
      const from = g._at;
      const start = performance.now();
      for (;;) {
        if (gen !== generation) return false;
        const t = Math.min(1, (performance.now() - start) / ms);
        const e = t < 0.5 ? 2 * t * t : 1 - (2 - 2 * t) * (2 - 2 * t) / 2;
        place(g, from.x + (to.x - from.x) * e, from.y + (to.y - from.y) * e,
              from.scale + (to.scale - from.scale) * e);
        if (t >= 1) return true;
        await frame();
      }
    }

    async function animateMove(move, o) {
      const { seat, piece, from, to } = move;
      const captures = move.captures || [];
      const stepMs = (o && o.stepMs) || 140;
      const gen = ++generation;
      const finish = () => {
        if (gen !== generation) return;
        pieces[seat][piece] = to;
        for (const [s, i] of captures) pieces[s][i] = -1;
        render();
      };
      if (reducedMotion() || stepMs <= 0) { finish(); return; }
      const g = tokens[seat][piece];
      pieceLayer.appendChild(g);  // on top while it walks
      g.classList.add("walking");
      const path = [];
      if (from < 0) path.push(cellOf(seat, 0));
      else for (let p = from + 1; p <= Math.min(to, model.goal); p++) path.push(cellOf(seat, p));
      for (const c of path) {
        if (!(await glide(g, { x: c.x, y: c.y, scale: 1 }, stepMs, gen))) break;
      }
      g.classList.remove("walking");
      if (gen === generation && captures.length) {
        await Promise.all(captures.map(([s, i]) => {
          const t = tokens[s][i];
          pieceLayer.appendChild(t);
          return glide(t, { ...nestSpot(geo.bySeat[s], i), scale: 1 }, stepMs * 3, gen);
        }));
      }
      finish();
    }

    function setPieces(next) {
      generation++;
      pieces = model.colours.map((_, seat) => {
        const row = (next && next[seat]) || [];
        return Array.from({ length: pieceCount }, (_, i) => (row[i] === undefined ? -1 : row[i]));
      });
      render();
    }

    function setMovable(seat, moves, onPick, o) {
      movable = seat === null || seat === undefined || !moves
        ? null : { seat, moves, onPick: onPick || null, chosen: o && o.chosen };
      decorate();
    }

    function setLastMove(seat, piece) {
      lastMove = seat === null || seat === undefined ? null : [seat, piece];
      decorate();
    }

    function destroy() {
      generation++;
      if (resized) resized.disconnect();
      svg.removeEventListener("click", onClick);
      svg.removeEventListener("keydown", onKey);
      svg.textContent = "";
      svg.classList.remove("ludo-board");
    }

    render();
    return { setPieces, setMovable, setLastMove, animateMove, cellOf, destroy,
             geometry: geo };
  }

  return { create, SYMBOL, geometry };
})();
// ---- end of board.js
