// web/js/lib/board.js's geometry, in node (no DOM: the module touches none when imported):
// where each track square, home column and nest lies on the 15×15 grid of
// docs/rules.md#the-board, for the boards the server describes (getReplaySteps `board`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { LudoBoard } from "../js/lib/board.js";

const COLOURS = ["yellow", "blue", "red", "green"];
// The server's board model, as much of it as the geometry reads.
function model(kind, players) {
  const arms = kind === "by_players" ? players : 4;
  const colourIndex = kind === "by_players"
    ? [...Array(players).keys()]
    : { 2: [0, 2], 3: [0, 1, 2], 4: [0, 1, 2, 3] }[players];
  return { kind, length: 13 * arms, colour_index: colourIndex, colours: COLOURS.slice(0, players) };
}
const key = (cell) => `${cell.row},${cell.col}`;
const inGrid = (cell) => cell.row >= 0 && cell.row < 15 && cell.col >= 0 && cell.col < 15;

test("the cross has 52 squares, each on the grid, each once", () => {
  for (const players of [2, 3, 4]) {
    const g = LudoBoard.geometry(model("cross", players), 0);
    assert.equal(g.track.length, 52);
    assert.ok(g.track.every(inGrid));
    assert.equal(new Set(g.track.map(key)).size, 52);
  }
});

test("a piece steps to a neighbouring square (a side or, at a corner, a diagonal)", () => {
  const g = LudoBoard.geometry(model("cross", 4), 0);
  g.track.forEach((cell, i) => {
    const next = g.track[(i + 1) % g.track.length];
    const far = Math.max(Math.abs(cell.row - next.row), Math.abs(cell.col - next.col));
    assert.equal(far, 1, `square ${i} to ${i + 1}`);
  });
});

test("the chosen seat's arm is drawn at the bottom, its start on the bottom arm", () => {
  for (const bottom of [0, 1, 2, 3]) {
    const g = LudoBoard.geometry(model("cross", 4), bottom);
    const arm = g.bySeat[bottom];
    assert.equal(arm.q, 0);
    assert.ok(g.track[arm.start].row >= 9, `seat ${bottom} starts low`);
  }
});

test("home columns lie off the track and lead to the centre", () => {
  const g = LudoBoard.geometry(model("cross", 4), 0);
  const track = new Set(g.track.map(key));
  for (const arm of g.arms) {
    assert.equal(arm.home.length, 5);
    assert.ok(arm.home.every((cell) => inGrid(cell) && !track.has(key(cell))));
    const last = arm.home[4];
    assert.ok(Math.abs(last.row - 7) + Math.abs(last.col - 7) === 2, "beside the goal");
  }
});

test("a by_players board has an arm per player and bridges over the missing ones", () => {
  const two = LudoBoard.geometry(model("by_players", 2), 0);
  assert.equal(two.track.length, 26);
  assert.equal(two.armCount, 2);
  assert.equal(two.bridges.length, 2);
  const three = LudoBoard.geometry(model("by_players", 3), 0);
  assert.equal(three.track.length, 39);
  assert.equal(three.bridges.length, 1);
  const four = LudoBoard.geometry(model("by_players", 4), 0);
  assert.equal(four.bridges.length, 0);
});
