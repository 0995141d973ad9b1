// ---- replay_words.js: the replay viewer's own words (web/pages/replay_viewer.html),
// added to site.js's WORDS (imported, it adds them), and `matchWords`, how the viewer
// and the dispute report (dispute_report.html, which reuses these words) say a match's
// seats, events, stamps and legal moves. The events themselves are worded with the
// table's `ev.*`; Japanese follows the site's rule page (shared/seeds/000).
import { WORDS, mergeWords, lang, t, eventWords, spotName, seatLabel, colourLabel, seatWho } from "./site.js";
mergeWords({
  ja: {
    viewer: {
      page_title: "ルドーのリプレイ", title: "リプレイ",
      playing: "対局中", finished: "終了",
      download: "リプレイのファイルを保存", audit_json: "監査（JSON）",
      step_through: "対局を1手ずつ見る",
      first: "最初のイベント（Home）", prev: "前のイベント（←）",
      next: "次のイベント（→）", last: "最後のイベント（End）",
      scrub: "イベント", die: "サイコロの目",
      timeline: "経過", timeline_label: "印のついたイベントの時間軸",
      marks: { capture: "取った", timeout: "時間切れ", "stand-in": "CPUが代わり", reclaim: "席に戻った", concede: "投了", finish: "上がり", stamp: "スタンプ" },
      event_n: "イベント {n}", roll_n: "振りの番号 {n}", decided_by: "決めたのは{by}",
      by: { player: "プレイヤー", cpu: "CPUの席", "stand-in": "代わりに打つCPU",
            timeout: "CPU（時間切れ）", auto: "ルール", system: "サーバー" },
      options_roll: "{who}が{die}で動かせるコマ", options_move: "{die}の目で動かせたコマ",
      option: "コマ{piece}: {from} → {to}", option_capture: "（{who}のコマ{piece}を取る）",
      chosen: "← 選んだ手",
      fair: "サイコロの公正さ",
      fair_text: "最初の1回を振る前に、サーバーは秘密のサイコロの種のSHA-256を約束として公開しました。サイコロの目はどれも HMAC-SHA256（鍵 = サーバーの種、メッセージ = 「クライアントの種:n:k」）から決まります。その中で最初に出てくる252未満のバイトを6で割った余りに1を足したものが目です。このページは、対局を表示したあと、そのすべてをあなたのブラウザーで少しずつ計算し直します。",
      commitment: "約束（種のハッシュ）", client_seed: "クライアントの種",
      server_seed: "公開されたサーバーの種", seed_sha: "種のSHA-256", dice: "サイコロの目",
      server_audit: "サーバーの監査",
      seed_length: "{n}文字（各席の種を | でつないだもの）",
      not_started: "（まだ始まっていません）", not_revealed: "まだ公開されていません",
      checkable_later: "対局が終わってサーバーが種を公開すると、サイコロの目を確かめられます（ここまで{n}回振りました）。",
      seed_ok: "{hash} ✓ 約束と一致します", seed_bad: "{hash} ✗ 約束と一致しません", not_hex: "16進数ではありません",
      dice_summary: "{total}回中{good}回の目が公開された種と一致します",
      dice_reading: "振った目を読み込んでいます…",
      dice_checking: "このページでサイコロの目を確かめています: {total}回中{done}回…",
      dice_failed: "振った目を読み込めませんでした（{why}）。ページを読み込み直してください。",
      die_ok: "✓ 一致", die_bad: "✗ 不一致",
      col_n: "振りの番号 n", col_event: "イベント", col_player: "プレイヤー",
      col_recorded: "記録された目", col_derived: "計算し直した目", col_check: "一致",
      audit_ok: "✓ すべての確認に合格しました（イベント{events}件・振り{rolls}回・移動{moves}回）",
      audit_bad: "✗ イベント{version}（{type}）で確認「{check}」が合いません: {message}",
      audit_none: "取得できません（{why}）",
      load_failed: "対局を読み込めませんでした: {why}",
      still_playing: "この対局はまだ続いています。ページを読み込み直すと最新の経過が見られます。",
      // a long match is read a range of events at a time
      loading_step: "イベント{n}を読み込んでいます…",
      step_failed: "イベント{n}を読み込めませんでした（{why}）。もう一度選んでください。",
      events_shown: "全{count}件のうち、イベント{from}〜{to}",
      events_earlier: "▲ これより前のイベント", events_later: "▼ これより後のイベント",
      events_loading: "読み込んでいます…",
      events_failed: "イベントを読み込めませんでした（{why}）。もう一度押してください。",
      // the match's analysis (docs/analysis.md)
      an: {
        title: "対局の分析", chart_label: "各プレイヤーが1位になる確率のグラフ",
        loading: "分析を読み込んでいます…",
        pending: "分析はまだできていません。対局が終わってから数秒でできます。",
        playing: "分析は対局が終わってからできます。",
        none: "この対局の分析はありません。",
        unavailable: "いまは分析を表示できません（ランキングのサービスが応答しません）。",
        by: "評価に使ったもの: {evaluator}",
        explain: "各プレイヤーが1位になる確率を、手番が終わるごとに示します。数字の増減はパーセントポイントです。",
        hint: "グラフをクリックまたはタップすると、その場面へ移ります。番号は大きく動いた手番です。",
        now: "イベント{n}の時点: {chances}",
        line_text: "{who}: 最初{start}、最高{top}（イベント{at}）、最後{end}",
        swings: "大きく動いた手番",
        turn: "{dice}が出た{captured}",
        captured: "、{who}のコマを取った",
        swing: "{by}の番（{turn}）: {changes}",
        swing_change: "{who} {change}", swing_join: "、",
        seats: "プレイヤーごとのまとめ",
        col_player: "プレイヤー", col_luck: "サイコロ", col_choices: "選んだ手",
        col_rest: "ほかのプレイヤーの番など",
        col_best: "最善を選んだ回数", col_chance: "1位になる確率",
        best_of: "{n}回中{best}回",
        best: "★ 最善",
        played_best: "最善の手を選びました。",
        played_error: "最善はコマ{piece}でした（この手: {error}）。",
        roll_luck: "この目の運（{who}）: {luck}",
      },
    },
  },
  en: {
    viewer: {
      page_title: "Ludo replay", title: "Replay",
      playing: "being played", finished: "finished",
      download: "Download replay file", audit_json: "Audit (JSON)",
      step_through: "Step through the match",
      first: "first event (Home)", prev: "previous event (←)",
      next: "next event (→)", last: "last event (End)",
      scrub: "event", die: "the die",
      timeline: "Timeline", timeline_label: "timeline of marked events",
      marks: { capture: "capture", timeout: "timeout", "stand-in": "stand-in", reclaim: "reclaim", concede: "concede", finish: "finish", stamp: "stamp" },
      event_n: "event {n}", roll_n: "roll {n}", decided_by: "decided by {by}",
      by: { player: "the player", cpu: "a CPU seat", "stand-in": "the CPU stand-in",
            timeout: "the CPU (turn timed out)", auto: "the rules", system: "the server" },
      options_roll: "Legal moves for {who}'s {die}", options_move: "The moves the {die} allowed",
      option: "piece {piece}: {from} → {to}", option_capture: ", captures {who}'s piece {piece}",
      chosen: "← chosen",
      fair: "Fair dice",
      fair_text: "Before the first roll the server published a commitment: the SHA-256 of a secret seed. Every die is HMAC-SHA256(key = server seed, message = “client seed:n:k”); the first byte below 252 of it gives the die (byte mod 6 + 1). Once the match is drawn, this page recomputes all of it here, in your browser, a few dice at a time.",
      commitment: "Commitment (seed hash)", client_seed: "Client seed",
      server_seed: "Revealed server seed", seed_sha: "SHA-256 of the seed", dice: "Dice",
      server_audit: "Server audit",
      seed_length: "{n} characters, the seats' seeds joined by |",
      not_started: "(not started)", not_revealed: "not revealed yet",
      checkable_later: "The dice will be checkable after the match ends, when the server reveals its seed ({n} rolls so far).",
      seed_ok: "{hash} ✓ matches the commitment", seed_bad: "{hash} ✗ does NOT match the commitment", not_hex: "not hex",
      dice_summary: "{good} of {total} dice match the revealed seed",
      dice_reading: "Reading the rolls…",
      dice_checking: "Checking the dice in this page: {done} of {total}…",
      dice_failed: "Could not read the rolls ({why}). Reload the page to try again.",
      die_ok: "✓ matches", die_bad: "✗ differs",
      col_n: "Roll n", col_event: "Event", col_player: "Player",
      col_recorded: "Recorded die", col_derived: "Re-derived die", col_check: "Match",
      audit_ok: "✓ every check holds ({events} events, {rolls} rolls, {moves} moves)",
      audit_bad: "✗ {check} fails at event {version} ({type}): {message}",
      audit_none: "not available ({why})",
      load_failed: "Could not load the match: {why}",
      still_playing: "This match is still being played: reload the page to see its newest events.",
      // a long match is read a range of events at a time
      loading_step: "Loading event {n}…",
      step_failed: "Could not load event {n} ({why}). Choose it again to retry.",
      events_shown: "Events {from}–{to} of {count}",
      events_earlier: "▲ Earlier events", events_later: "▼ Later events",
      events_loading: "Loading…",
      events_failed: "Could not load the events ({why}). Press again to retry.",
      // the match's analysis (docs/analysis.md)
      an: {
        title: "Analysis", chart_label: "Chart of each player's chance to finish first",
        loading: "Reading the analysis…",
        pending: "The analysis is not written yet: it follows the end of the match within seconds.",
        playing: "The analysis comes once the match is over.",
        none: "This match has no analysis.",
        unavailable: "The analysis cannot be shown right now (the ranking service does not answer).",
        by: "Valued by {evaluator}",
        explain: "Each player's chance to finish first, after every turn; changes are in percentage points.",
        hint: "Click or tap the chart to go to that moment. The numbers mark the turns that moved a chance most.",
        now: "At event {n}: {chances}",
        line_text: "{who}: {start} at the start, highest {top} (event {at}), {end} at the end",
        swings: "The biggest swings",
        turn: "rolled {dice}{captured}",
        captured: ", captured {who}'s piece",
        swing: "{by}'s turn ({turn}): {changes}",
        swing_change: "{who} {change}", swing_join: ", ",
        seats: "Each player's chance, and what moved it",
        col_player: "Player", col_luck: "Dice", col_choices: "Choices",
        col_rest: "Other players' turns and the rest",
        col_best: "Best choices", col_chance: "Chance to finish first",
        best_of: "{best} of {n}",
        best: "★ best",
        played_best: "The best move was played.",
        played_error: "Piece {piece} was best (this choice: {error}).",
        roll_luck: "Luck of this roll for {who}: {luck}",
      },
    },
  },
});

// The words of the match `model()` (a function: the page's model when asked), which
// holds `seats`, `board`, `first_seat` and `fairness` (getReplaySteps and
// getDisputeReport alike, docs/api.md). An event is a step or a report entry: its type,
// seat and facts (`die`, `chosen`, `from`, `to`, …).
export function matchWords(model) {
  // A seat as the table names it: "○黄 CPU（ふつう）" / "○Yellow hostess".
  // (site.js `seatLabel` and `seatWho`: the one naming of the site's pages).
  const seatName = (seat) => seatLabel(model().seats[seat]);
  const colourName = colourLabel;
  function who(seat) {
    return seat === null || seat === undefined ? "" : seatWho(model().seats[seat]);
  }
  const where = (p) => spotName(model().board, p);
  // Worded as the table words it (site.js `eventWords`); a kind of event this page does
  // not know yet: the server's English line.
  function eventText(event) {
    const m = model();
    const facts = { ...event, piece: event.chosen, first_seat: m.first_seat, seed_hash: m.fairness.seed_hash };
    const said = eventWords(facts, who, m.board);
    return said ? said.text : event.text;
  }
  // A quick-chat stamp (its id, domain/stamps.py) sent from `seat`, as the table says it.
  function stampText(seat, stamp) {
    const sticker = WORDS[lang].sticker && stamp in WORDS[lang].sticker;
    const word = sticker ? t(`sticker.${stamp}`) : t(`stamp.${stamp}`);
    return t(sticker ? "sticker_said" : "stamp_said", { who: who(seat), stamp: word });
  }
  // One legal move of a roll: "コマ2: 巣 → スタート（○赤 Bo のコマ1を取る）".
  function optionText(o) {
    let text = t("viewer.option", { piece: o.piece + 1, from: where(o.from), to: where(o.to) });
    for (const [s, p] of o.captures) text += t("viewer.option_capture", { who: who(s), piece: p + 1 });
    return text;
  }
  return { seatName, colourName, who, where, eventText, stampText, optionText };
}
// ---- end of replay_words.js
