// ---- site.js: what the site's pages share (lobby, table, ratings, …), imported by
// their modules.
// Words in both languages, the guest kept on this device, the API, live sockets.
import { $, LANG_KEY, pickLanguage, el } from "./page_common.js";
export const SYMBOL = { yellow: "○", blue: "□", red: "△", green: "✚" };

// --------------------------------------------------------------------------- words
// Japanese follows the site's rule page (shared/seeds/000): rule names as it spells them.
export const WORDS = {
  ja: {
    site: "ルドー", lobby: "ロビー", ratings: "ランキング", rules_link: "ルール", arenas: "アリーナ",
    lang_switch: "English", tagline: "ルドーは、2〜4人・約20分の、サイコロを振ってコマを進めるすごろく型のボードゲームです。4つのコマを巣から出して盤を1周させ、先に全部をゴールに入れたら勝ち。相手のコマに止まると巣へ戻せます。ブラウザで無料・登録不要で遊べます。",
    your_name: "あなたの名前", name_hint: "この端末に保存されます。登録は要りません。",
    name_needed: "名前を入れてください（1〜32文字）", name_saved: "名前を保存しました。",
    name_change_note: "名前を変えても、レートはそのままです。",
    name_placeholder: "空欄なら名前を自動でつけます", name_made: "名前を自動でつけました。いつでも変えられます。",
    save: "保存", play_now: "このルールでそのまま遊ぶ", play_now_hint: "4人の卓を作り、CPUを3人入れて始めます。",
    create_party: "パーティーを作る", seats_label: "人数", seats_n: "{n}人",
    preset: "ルール", preset_standard: "このサイトの初期値", preset_bga: "Board Game Arena",
    local_rules: "ローカルルール一覧", rule_name: "名称", rule_text: "内容", rule_default: "初期値",
    rule_setting: "設定", changed: "変更", turn_limit: "手番の制限時間", limit_none: "なし",
    limit_s: "{n}秒", mode: "対戦", ranked: "ランク戦", casual: "カジュアル",
    create: "作る", open_parties: "参加できるパーティー", no_parties: "いま参加を待っているパーティーはありません。作ってみましょう。",
    join: "参加", watch: "観戦", open_table: "開く", host_of: "{name}の卓", seats_free: "{taken}/{n}人",
    live_list: "この一覧は自動で更新されます。",
    connecting: "接続中…", reconnecting: "接続が切れました。{s}秒後に再接続します…",
    reconnecting_now: "接続が切れました。再接続しています…", connected: "接続しました",
    share: "招待リンク", copy: "コピー",
    seat: "席 {n}", empty_seat: "空席", sit_here: "この席に座る", add_cpu: "CPUを入れる",
    remove: "外す", leave_table: "卓を離れる", start: "始める", host: "ホスト",
    waiting_players: "全員がそろうと、ホストが始められます。", waiting_host: "ホストが始めるのを待っています。",
    you: "あなた", you_mark: "（あなた）", cpu: "CPU", cpu_level: { easy: "CPU（弱い）", normal: "CPU（ふつう）", hard: "CPU（強い）" },
    level: "強さ", settings: "設定", save_settings: "設定を変える",
    spectating: "観戦中です（操作はできません）。", join_hint: "「参加」で空いている席に座れます（名前が空欄なら自動でつけます）。",
    footer: "ルールの監修：株式会社Qdan（定番ゲーム集の既定に準拠）", party_closed: "このパーティーは閉じました。",
    your_turn_roll: "あなたの番です。サイコロを振ってください。", your_turn_move: "{die}が出ました。動かすコマを選んでください。",
    turn_of: "{who}の番です。", cpu_thinking: "{who}の番です（CPUが考えています）。",
    roll: "サイコロを振る", roll_key: "Rキーかスペースキーでもサイコロを振れます。", move_keys: "1〜4のキーでもコマを選べます。", die: "サイコロ",
    rolling: "サイコロを振っています…", moving: "コマ{piece}を動かしています…", leaving: "席を離れています…",
    reclaiming: "席に戻っています…", stood_in_you: "CPUが代わりに打っています。「席に戻る」を押すと、また打てます。",
    cpu_turn_you: "時間切れのため、この番はCPUが打ちます。", not_your_piece: "それは{who}のコマです。あなたのコマは{mine}です。",
    watching_piece: "観戦中なので、コマは動かせません。", copied_link: "招待リンクをコピーしました。",
    rolls_left: "残り{n}回", timer: "残り{s}秒", stood_in: "CPUが代わりに打っています",
    reclaim: "席に戻る", leave_match: "抜ける", leave_confirm: "抜けるとCPUが代わりに打ちます。抜けますか？",
    sound: "音", sound_on: "音: あり", sound_off: "音: なし", log: "経過", players: "プレイヤー",
    // The log shows the latest lines first; earlier ones come when the reader asks.
    log_more: "これより前の経過を見る（あと{n}件）", log_loading: "前の経過を読み込んでいます…",
    log_failed: "前の経過を読み込めませんでした（{why}）。もう一度押してください。",
    log_added: "前の経過を{n}件、上に加えました。", log_earlier: "前の経過", log_latest: "最近の経過",
    finished: "対局が終わりました", place: "{n}位", place_shared: "{n}位（引き分け）",
    rematch: "もう一度", replay: "リプレイを見る", rating: "レート", rating_pending: "レートを計算しています…",
    rating_none: "カジュアル戦なのでレートは変わりません。", rating_change: "{before} → {after}（{delta}）",
    next_first: "次の局の先手: {who}",
    // An arena's table (docs/arenas.md): no もう一度, back to the arena at the end.
    arena_match: "アリーナの対局", back_to_arena: "アリーナへ戻る", arena_back_in: "{s}秒後にアリーナへ戻ります。",
    arena_going: "アリーナへ戻ります…", stay_here: "ここに残る", arena_stayed: "このページに残ります。",
    arena_next: "次の対局が組まれました。", next_table: "次の卓へ",
    ev: {
      created: "対局の準備ができました。サイコロの種は封印済みです（ハッシュ {hash}…）。",
      started: "対局開始。先手は{who}です。",
      rolled: "{who}: {die}",
      entered: "{who}のコマ{piece}が巣から出ました。",
      moved: "{who}のコマ{piece}が{n}マス進みました。",
      moved_one: "{who}のコマ{piece}が1マス進みました。",
      to_home: "{who}のコマ{piece}がゴールの道に入りました。",
      to_goal: "{who}のコマ{piece}がゴールに入りました。",
      captured: "{who}のコマを取って巣へ戻しました。",
      bonus: "もう1回振れます。", bonus_n: "あと{n}回振れます。", auto_enter: "（振らずに出ました）",
      pass_none: "{who}: 動かせるコマが無いので番が終わります。", pass_retry: "{who}: 出せる目が出ませんでした。もう一度振れます。",
      pass_sixes: "{who}: 6が3回続いたので番が終わります。",
      turn: "{who}の番です。", timeout: "{who}の時間切れ。CPUが続きを打ちます。",
      stand_in: { timeouts: "3回続けて時間切れのため、{who}の代わりにCPUが打ちます。",
                  disconnected: "{who}の接続が戻らないため、CPUが代わりに打ちます。",
                  left: "{who}が抜けたので、CPUが代わりに打ちます。" },
      reclaimed: "{who}が席に戻りました。", finished_player: "{who}が{n}位で上がりました。",
      conceded: "{who}が投了しました。{who}は最下位です。",
      over: "対局終了。", seed: "サイコロの種が公開されました。リプレイで全部の目を確かめられます。",
      // The same events when the seat they are about is this device's player.
      you: {
        started: "対局開始。先手はあなたです。", rolled: "あなた: {die}",
        entered: "あなたのコマ{piece}が巣から出ました。", moved: "あなたのコマ{piece}が{n}マス進みました。",
        moved_one: "あなたのコマ{piece}が1マス進みました。", to_home: "あなたのコマ{piece}がゴールの道に入りました。",
        to_goal: "あなたのコマ{piece}がゴールに入りました。", captured: "あなたのコマを取って巣へ戻しました。",
        pass_none: "動かせるコマが無いので、あなたの番が終わります。",
        pass_retry: "出せる目が出ませんでした。もう一度振れます。",
        pass_sixes: "6が3回続いたので、あなたの番が終わります。",
        turn: "あなたの番です。", timeout: "あなたの時間切れ。CPUが続きを打ちます。",
        stand_in: { timeouts: "3回続けて時間切れのため、あなたの代わりにCPUが打ちます。",
                    disconnected: "接続が戻らなかったため、あなたの代わりにCPUが打ちます。",
                    left: "あなたが抜けたので、CPUが代わりに打ちます。" },
        reclaimed: "あなたが席に戻りました。", finished_player: "あなたが{n}位で上がりました。",
        conceded: "あなたが投了しました。あなたは最下位です。",
      },
    },
    // The board said in words (board.js's labels): where a piece is, a move offered.
    spot: {
      board: "ルドーの盤", nest: "巣", start: "スタート", goal: "ゴール", home_n: "ゴールの道{n}マス目",
      square_n: "{n}マス目", piece: "{who}のコマ{piece}（{where}）", move: "コマ{piece}を動かす: {from} → {to}",
    },
    // Why a piece cannot move, from the server's refusal (docs/api.md, `why`).
    why: {
      enter_on: "コマ{piece}は巣の中です。巣から出られるのは{values}が出たときです。",
      in_goal: "コマ{piece}はもうゴールに入っています。",
      exact_finish: "コマ{piece}がゴールに入るには、ぴったり{needs}が必要です（{die}では行き過ぎます）。",
      block: "コマ{piece}は、{who}の2つ重ねのコマを通れません。",
      no_overtaking: "コマ{piece}は、{who}のコマを追い越せません（追い越し禁止）。",
      no_overtaking_own: "コマ{piece}は、自分のコマを追い越せません（追い越し禁止）。",
      or: "か",
    },
    opt: {
      board: { name: "盤", text: "既定の「いつも十字」は、人数によらず十字の盤で遊びます。「人数に合わせる」は2人が横長の盤、3人がT字の盤になる、標準とは違う遊び方です。",
               values: { cross: "いつも十字", by_players: "人数に合わせる" } },
      enter_on: { name: "巣から出る目", text: "巣のコマをスタートへ出せる目です。" },
      empty_course: { name: "コースにコマが無いとき", text: "自分のコマがコースに1つも無いときの扱いです。既定の「特になし」は普通にサイコロを振ります。「振らずに1つ出る」（サイコロを押すとコマが1つ出て番が終わる）と「3回振れる」（巣から出る目が出るまで3回まで振れる）は、標準とは違う遊び方です。",
                      values: { normal: "特になし", auto_enter: "振らずに1つ出る", three_tries: "3回振れる" } },
      three_sixes: { name: "6が3回で番が終わる", text: "6が3回続いたら、3回目は動かさずに番が終わります。「なし」は標準とは違う遊び方です。" },
      capture_bonus: { name: "取ったらもう1回", text: "相手のコマを巣へ戻したら、もう1回振れます。「なし」は標準とは違う遊び方です。" },
      goal_bonus: { name: "ゴールでもう1回", text: "コマをゴールに入れたら、もう1回振れます。" },
      safe_squares: { name: "安全なマス", text: "止まっても取られないマスです。既定の「スタートと星」は、各色のスタートのマスと、その8マス先です。「なし」と「スタート」だけは、標準とは違う遊び方です。",
                      values: { start_and_star: "スタートと星", start: "スタート", none: "なし" } },
      blocks: { name: "通れないマス", text: "既定の「2つ重ね」は、相手の同じ色のコマが2つ以上あるマスを通れず止まれません。「なし」と「追い越し禁止」（どのコマ（自分のも）も追い越せない。止まるのはかまわない）は、標準とは違う遊び方です。",
                values: { double: "2つ重ね", none: "なし", no_overtaking: "追い越し禁止" } },
      exact_finish: { name: "ぴったりで上がる", text: "ゴールにはぴったりの目で入ります。なしにすると、大きい目でもゴールで止まります。" },
      play_to_end: { name: "全員の順位まで", text: "1人が上がっても続けて、残り1人になるまで順位を決めます。" },
      rotate_first: { name: "もう一度で先手を回す", text: "［もう一度］で次の局の先手を隣の人へ回します。" },
      quick_start: { name: "クイックスタート", text: "はじめから各自1つのコマがスタートのマスに出ています（Board Game Arena の遊び方）。" },
      on: "あり", off: "なし", play_to_end_off: "なし（1人が上がったら終わり）",
    },
    colour: { yellow: "黄", blue: "青", red: "赤", green: "緑" },
    leaderboard: "ランキング", player_page: "プレイヤー", rank: "順位", name: "名前",
    matches: "対局数", provisional: "暫定", when: "日時", place_h: "順位", change: "増減", left: "途中で抜けた",
    ratings_note: "ランク戦の成績から計算します。勝てば下がらず、負けたり抜けたりすれば上がりません。対局が少ないうちは「暫定」です。", history: "レートの推移", no_ratings: "まだランク戦の記録がありません。", no_ratings_yet: "このプレイヤーはまだランク戦で評価されていません。",
    not_found: "見つかりません。", back_to_lobby: "ロビーへ戻る",
    missing: { party: "この卓は見つかりません", match: "この対局は見つかりません",
               player: "このプレイヤーは見つかりません", arena: "このアリーナは見つかりません",
               page: "このページは見つかりません" },
    missing_text: "リンクが古いか、打ち間違いかもしれません。ロビーから遊べます。",
    errors: {
      network: "サーバーにつながりません。少し待ってからもう一度どうぞ。",
      not_your_turn: "あなたの番ではありません。", roll_first: "先にサイコロを振ってください。",
      move_first: "先にコマを動かしてください。", illegal_move: "そのコマは動かせません。",
      party_full: "満席です。", seat_taken: "その席はもう埋まっています。", already_seated: "もう座っています。",
      seats_empty: "空席があります。人が来るのを待つか、CPUを入れてください。",
      not_host: "ホストだけができます。", not_open: "この卓はもう始まっています。",
      conflict: "ほかの操作と重なりました。もう一度どうぞ。", stood_in: "CPUが代わりに打っています。「席に戻る」を押してください。",
      cpu_playing: "時間切れのため、この番はCPUが打ちます。", unauthorized: "この端末のゲスト情報が無効です。名前を入れ直してください。",
      match_finished: "対局は終わっています。", too_many: "操作が多すぎます。少し待ってください。",
    },
    completion: "完走率 {n}%", completion_help: "直近50試合のうち最後まで打った割合（時間切れでCPUが代わりに打った対局も完走、途中で抜けた対局は数えません）",
    // Quick-chat stamps (domain/stamps.py's ids) and who is connected, at the table.
    stamps: "スタンプ",
    stamp: { good_luck: "よろしく", nice: "ナイス！", thanks: "ありがとう", sorry: "ごめん",
             good_game: "おつかれさま", wow: "すごい！", so_close: "おしい！", one_more: "もう一回！",
             six: "6!", star: "★", laugh: "(≧▽≦)", tears: "(T_T)" },
    sticker: { six: "サイコロの6!", star: "星", laugh: "大笑い", tears: "涙" },
    stamp_said: "{who}: 「{stamp}」", stamp_said_you: "あなた: 「{stamp}」",
    sticker_said: "{who}: スタンプ「{stamp}」", sticker_said_you: "あなた: スタンプ「{stamp}」",
    mute: "ミュート", unmute: "ミュート解除", muted: "ミュート中",
    mute_label: "{who}のスタンプをミュートする", unmute_label: "{who}のスタンプのミュートを解除する",
    online: "接続中", away: "離席中",
    stamps_switch_on: "スタンプ: あり", stamps_switch_off: "スタンプ: なし",
    stamps_off_note: "ホストがスタンプをオフにしています。",
    stamp_errors: { too_soon: "スタンプは3秒に1回までです。", stamps_off: "ホストがスタンプをオフにしています。",
                    spectator: "観戦中はスタンプを送れません。", unknown_stamp: "そのスタンプはありません。" },
  },
  en: {
    site: "Ludo", lobby: "Lobby", ratings: "Ratings", rules_link: "Rules", arenas: "Arenas",
    lang_switch: "日本語", tagline: "Ludo is a race board game for 2–4 players, about 20 minutes: roll the die, bring your four pieces out of the nest, once round the board and into the goal. Land on an opponent to send it home. Free in your browser, no registration.",
    your_name: "Your name", name_hint: "Kept on this device. No registration.",
    name_needed: "Enter a name (1–32 characters)", name_saved: "Name saved",
    name_change_note: "A new name keeps your rating.",
    name_placeholder: "Empty: we make one up", name_made: "We made up a name for you: change it any time.",
    save: "Save", play_now: "Play with these rules now", play_now_hint: "Opens a 4-seat table with three CPUs and starts.",
    create_party: "Create a party", seats_label: "Players", seats_n: "{n} players",
    preset: "Rules", preset_standard: "This site's defaults", preset_bga: "Board Game Arena",
    local_rules: "Local rules", rule_name: "Rule", rule_text: "What it does", rule_default: "Default",
    rule_setting: "Setting", changed: "changed", turn_limit: "Turn time limit", limit_none: "None",
    limit_s: "{n} s", mode: "Mode", ranked: "Ranked", casual: "Casual",
    create: "Create", open_parties: "Open parties", no_parties: "No party is waiting for players right now. Create one!",
    join: "Join", watch: "Watch", open_table: "Open", host_of: "{name}'s table", seats_free: "{taken}/{n} seated",
    live_list: "This list updates by itself.",
    connecting: "Connecting…", reconnecting: "Connection lost. Reconnecting in {s} s…",
    reconnecting_now: "Connection lost. Reconnecting…", connected: "Connected",
    share: "Invite link", copy: "Copy",
    seat: "Seat {n}", empty_seat: "Empty seat", sit_here: "Sit here", add_cpu: "Add a CPU",
    remove: "Remove", leave_table: "Leave the table", start: "Start", host: "host",
    waiting_players: "When every seat is filled, the host can start.", waiting_host: "Waiting for the host to start.",
    you: "you", you_mark: " (you)", cpu: "CPU", cpu_level: { easy: "CPU (easy)", normal: "CPU (normal)", hard: "CPU (hard)" },
    level: "Level", settings: "Settings", save_settings: "Change settings",
    spectating: "You are watching (read-only).", join_hint: "Press Join to take a free seat (with no name, we make one up).",
    footer: "Rules supervised by Qdan Inc. (following the standard game collection's defaults)", party_closed: "This party has closed.",
    your_turn_roll: "Your turn: roll the die.", your_turn_move: "You rolled {die}. Choose a piece to move.",
    turn_of: "{who} to play.", cpu_thinking: "{who} to play (a CPU is thinking).",
    roll: "Roll the die", roll_key: "R or Space rolls the die.", move_keys: "Keys 1–4 choose a piece.", die: "Die",
    rolling: "Rolling…", moving: "Moving piece {piece}…", leaving: "Leaving your seat…",
    reclaiming: "Taking your seat back…", stood_in_you: "A CPU plays for you. Press “Take my seat back” to play again.",
    cpu_turn_you: "Your time ran out: a CPU plays the rest of your turn.", not_your_piece: "That is {who}'s piece; yours are {mine}.",
    watching_piece: "You are watching: pieces cannot be moved from here.", copied_link: "Invite link copied.",
    rolls_left: "{n} roll(s) left", timer: "{s} s left", stood_in: "a CPU plays for this seat",
    reclaim: "Take my seat back", leave_match: "Leave", leave_confirm: "If you leave, a CPU plays for you. Leave?",
    sound: "Sound", sound_on: "Sound: on", sound_off: "Sound: off", log: "What happened", players: "Players",
    // The log shows the latest lines first; earlier ones come when the reader asks.
    log_more: "Show earlier events ({n} more)", log_loading: "Loading earlier events…",
    log_failed: "Could not load earlier events ({why}). Press the button to try again.",
    log_added: "{n} earlier events added above.", log_earlier: "Earlier events", log_latest: "Latest events",
    finished: "The match is over", place: "Place {n}", place_shared: "Place {n} (shared)",
    rematch: "Play again", replay: "Watch the replay", rating: "Rating", rating_pending: "Computing ratings…",
    rating_none: "A casual match: ratings do not change.", rating_change: "{before} → {after} ({delta})",
    next_first: "First to play next: {who}",
    // An arena's table (docs/arenas.md): no "Play again", back to the arena at the end.
    arena_match: "Arena match", back_to_arena: "Back to the arena", arena_back_in: "Back to the arena in {s} s.",
    arena_going: "Going back to the arena…", stay_here: "Stay here", arena_stayed: "You stay on this page.",
    arena_next: "Your next match is ready.", next_table: "Go to your next table",
    ev: {
      created: "The table is set. The dice seed is sealed (hash {hash}…).",
      started: "The match begins. {who} plays first.",
      rolled: "{who} rolled {die}",
      entered: "{who}'s piece {piece} came out of the nest.",
      moved: "{who}'s piece {piece} moved {n} squares.",
      moved_one: "{who}'s piece {piece} moved 1 square.",
      to_home: "{who}'s piece {piece} turned into its home column.",
      to_goal: "{who}'s piece {piece} reached the goal.",
      captured: "It captured {who}'s piece and sent it home.",
      bonus: "One more roll.", bonus_n: "{n} more rolls.", auto_enter: "(entered without rolling)",
      pass_none: "{who}: no piece can move; the turn ends.", pass_retry: "{who}: no entering value; roll again.",
      pass_sixes: "{who}: a third six in a row ends the turn.",
      turn: "{who} to play.", timeout: "{who}'s time ran out; a CPU plays the rest of the turn.",
      stand_in: { timeouts: "After three timeouts in a row, a CPU plays for {who}.",
                  disconnected: "{who} did not come back; a CPU plays for them.",
                  left: "{who} left; a CPU plays for them." },
      reclaimed: "{who} is back.", finished_player: "{who} finished in place {n}.",
      conceded: "{who} conceded and is placed last.",
      over: "The match is over.", seed: "The dice seed is revealed: the replay checks every die.",
      // The same events when the seat they are about is this device's player.
      you: {
        started: "The match begins. You play first.", rolled: "You rolled {die}",
        entered: "Your piece {piece} came out of the nest.", moved: "Your piece {piece} moved {n} squares.",
        moved_one: "Your piece {piece} moved 1 square.", to_home: "Your piece {piece} turned into its home column.",
        to_goal: "Your piece {piece} reached the goal.", captured: "It captured your piece and sent it home.",
        pass_none: "No piece of yours can move; your turn ends.", pass_retry: "No entering value; roll again.",
        pass_sixes: "A third six in a row ends your turn.",
        turn: "Your turn.", timeout: "Your time ran out; a CPU plays the rest of your turn.",
        stand_in: { timeouts: "After three timeouts in a row, a CPU plays for you.",
                    disconnected: "You did not come back in time; a CPU plays for you.",
                    left: "You left; a CPU plays for you." },
        reclaimed: "You are back in your seat.", finished_player: "You finished in place {n}.",
        conceded: "You conceded and are placed last.",
      },
    },
    // The board said in words (board.js's labels): where a piece is, a move offered.
    spot: {
      board: "the Ludo board", nest: "nest", start: "start", goal: "goal", home_n: "home {n}",
      square_n: "square {n}", piece: "{who}'s piece {piece}, {where}", move: "Move piece {piece}: {from} → {to}",
    },
    // Why a piece cannot move, from the server's refusal (docs/api.md, `why`).
    why: {
      enter_on: "Piece {piece} is in the nest: it comes out only on {values}.",
      in_goal: "Piece {piece} is already in the goal.",
      exact_finish: "Piece {piece} needs exactly {needs} to reach the goal: {die} overshoots it.",
      block: "Piece {piece} cannot pass {who}'s pair.",
      no_overtaking: "Piece {piece} may not overtake {who}'s piece (no overtaking).",
      no_overtaking_own: "Piece {piece} may not overtake your own piece (no overtaking).",
      or: " or ",
    },
    opt: {
      board: { name: "Board", text: "The default, “always a cross”, plays on the cross whatever the number of players. “By players” gives 2 players a long board and 3 a T-shaped one, unlike the standard game.",
               values: { cross: "Always a cross", by_players: "By players" } },
      enter_on: { name: "Values that leave the nest", text: "The die values that bring a nest piece out to its start square." },
      empty_course: { name: "No piece on the course", text: "What happens when none of your pieces is on the course. The default, “nothing special”, rolls as usual. “Enter one without rolling” (pressing the die brings a piece out and ends the turn) and “three tries” (roll up to three times until an entering value comes) are unlike the standard game.",
                      values: { normal: "Nothing special", auto_enter: "Enter one without rolling", three_tries: "Three tries" } },
      three_sixes: { name: "Three sixes end the turn", text: "After three sixes in a row, the third is not played and the turn ends. “Off” is unlike the standard game." },
      capture_bonus: { name: "Capture: roll again", text: "Sending an opponent's piece back to its nest earns one more roll. “Off” is unlike the standard game." },
      goal_bonus: { name: "Goal: roll again", text: "Bringing a piece into the goal earns one more roll." },
      safe_squares: { name: "Safe squares", text: "Squares where a piece cannot be captured. The default, “start and star”, is every colour's start square and the square 8 ahead of it. “None” and “start only” are unlike the standard game.",
                      values: { start_and_star: "Start and star", start: "Start only", none: "None" } },
      blocks: { name: "Blocked squares", text: "The default, “two stacked”: a square holding two or more pieces of one opponent colour cannot be passed or landed on. “None” and “no overtaking” (no piece, yours included, may be passed; landing is fine) are unlike the standard game.",
                values: { double: "Two stacked", none: "None", no_overtaking: "No overtaking" } },
      exact_finish: { name: "Exact roll to finish", text: "A piece enters the goal only with the exact value. Off: a larger value stops on the goal." },
      play_to_end: { name: "Play to the last place", text: "Play goes on after the first player finishes, until one player is left." },
      rotate_first: { name: "Play again rotates the first seat", text: "“Play again” gives the first turn of the next match to the next seat." },
      quick_start: { name: "Quick start", text: "Each player begins with one piece already on its start square (Board Game Arena's way)." },
      on: "On", off: "Off", play_to_end_off: "Off (over when the first player finishes)",
    },
    colour: { yellow: "Yellow", blue: "Blue", red: "Red", green: "Green" },
    leaderboard: "Ratings", player_page: "Player", rank: "Rank", name: "Name",
    matches: "Matches", provisional: "provisional", when: "When", place_h: "Place", change: "Change", left: "left",
    ratings_note: "From ranked matches. A win never lowers a rating; a loss or leaving never raises it. Few matches: provisional.", history: "Rating history", no_ratings: "No ranked matches yet.", no_ratings_yet: "This player has no rated match yet.",
    not_found: "Not found.", back_to_lobby: "Back to the lobby",
    missing: { party: "No such party", match: "No such match", player: "No such player",
               arena: "No such arena", page: "No such page" },
    missing_text: "The link may be old or mistyped. You can play from the lobby.",
    errors: {
      network: "Cannot reach the server. Wait a moment and try again.",
      not_your_turn: "It is not your turn.", roll_first: "Roll the die first.",
      move_first: "Move a piece first.", illegal_move: "That piece cannot move.",
      party_full: "Every seat is taken.", seat_taken: "That seat is taken.", already_seated: "You already sit here.",
      seats_empty: "A seat is empty: wait for a player or add a CPU.",
      not_host: "Only the host can do this.", not_open: "This table has already started.",
      conflict: "Another action came first. Try again.", stood_in: "A CPU plays for you: press “Take my seat back”.",
      cpu_playing: "Your turn timed out: the CPU plays the rest of it.", unauthorized: "This device's guest is unknown. Enter your name again.",
      match_finished: "The match is over.", too_many: "Too many actions. Wait a moment.",
    },
    completion: "Finished {n}%", completion_help: "Matches played to the end of the last 50 (a CPU standing in for timeouts still counts as finishing; leaving does not)",
    // Quick-chat stamps (domain/stamps.py's ids) and who is connected, at the table.
    stamps: "Stamps",
    stamp: { good_luck: "Good luck", nice: "Nice!", thanks: "Thanks", sorry: "Sorry",
             good_game: "Good game", wow: "Wow!", so_close: "So close!", one_more: "One more!",
             six: "6!", star: "★", laugh: "(≧▽≦)", tears: "(T_T)" },
    sticker: { six: "Rolled a 6!", star: "Star", laugh: "Big laugh", tears: "Tears" },
    stamp_said: "{who}: “{stamp}”", stamp_said_you: "You: “{stamp}”",
    sticker_said: "{who}: sticker “{stamp}”", sticker_said_you: "You: sticker “{stamp}”",
    mute: "Mute", unmute: "Unmute", muted: "Muted",
    mute_label: "Mute {who}'s stamps", unmute_label: "Unmute {who}'s stamps",
    online: "online", away: "away",
    stamps_switch_on: "Stamps: on", stamps_switch_off: "Stamps: off",
    stamps_off_note: "The host has switched stamps off.",
    stamp_errors: { too_soon: "One stamp every 3 seconds.", stamps_off: "The host has switched stamps off.",
                    spectator: "Spectators cannot send stamps.", unknown_stamp: "No such stamp." },
  },
};

// A page's own words, added to these (deeply: {ja: {replay: {...}}, en: {...}}).
export function mergeWords(extra) {
  const merge = (into, from) => {
    for (const [k, v] of Object.entries(from)) {
      if (v && typeof v === "object" && !Array.isArray(v)) merge((into[k] = into[k] || {}), v);
      else into[k] = v;
    }
  };
  for (const [language, words] of Object.entries(extra)) merge(WORDS[language], words);
}

// The page's language (pickLanguage: page_common.js).
export let lang = pickLanguage();
document.documentElement.lang = lang;

// t("ev.moved", {who: "…"}): the text of `key` in the page's language, {names} filled in.
export function t(key, vars) {
  let value = key.split(".").reduce((node, part) => (node == null ? node : node[part]), WORDS[lang]);
  if (value === undefined) value = key;
  if (typeof value !== "string") return value;
  return value.replace(/\{(\w+)\}/g, (_, name) => (vars && name in vars ? String(vars[name]) : `{${name}}`));
}

// Every element with data-t="key" gets that text (data-t-attr="placeholder" puts it there).
export function translate(root) {
  for (const node of (root || document).querySelectorAll("[data-t]")) {
    const attr = node.dataset.tAttr;
    if (attr) node.setAttribute(attr, t(node.dataset.t));
    else node.textContent = t(node.dataset.t);
  }
}

export function switchLanguage() {
  lang = lang === "ja" ? "en" : "ja";
  localStorage.setItem(LANG_KEY, lang);
  document.documentElement.lang = lang;
  translate();
  document.dispatchEvent(new CustomEvent("languagechange"));
}

// ------------------------------------------------------------------ the guest
// The guest's id, name and secret token, kept in this browser only (localStorage): a
// reload or a new tab on this device is the same player, back in the same seats.
export const GUEST_KEY = "ludo.guest";
export function guest() {
  try {
    const g = JSON.parse(localStorage.getItem(GUEST_KEY) || "null");
    return g && g.id && g.token ? g : null;
  } catch (_) {
    return null;
  }
}

// A refused request: the server's `error` code, `detail`, `field`, and `why` (the facts of
// an illegal move: the rule that stops the piece, docs/api.md).
export class ApiError extends Error {
  constructor(status, code, detail, field, why, body) {
    super(detail || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    this.field = field;
    this.why = why || null;
    this.body = body || null;  // the whole error body (e.g. ranked_paused's `until`)
  }
}

// The server's clock minus ours, from the `Date` header of every API answer (turn timers
// count down against the server's clock; the header has whole seconds, hence the +0.5 s).
export let clockOffset = 0;
export const serverNow = () => Date.now() + clockOffset;
export function heardServerClock(res) {
  const date = Date.parse(res.headers.get("date") || "");
  if (Number.isFinite(date)) clockOffset = date + 500 - Date.now();
}

// An error as the player should read it: our words for codes we know, else the server's.
export function errorText(err) {
  if (!(err instanceof ApiError)) return t("errors.network");
  if (err.status === 429) return t("errors.too_many");
  const known = WORDS[lang].errors[err.code];
  return known || err.message;
}

// A key for a command's Idempotency-Key: random, so a retry of the same click is the
// same key and a new click a new one. (crypto.randomUUID needs a secure context.)
export function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function api(method, path, body, key) {
  const headers = { Accept: "application/json" };
  const g = guest();
  if (g) headers.Authorization = "Bearer " + g.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (key) headers["Idempotency-Key"] = key;
  let res;
  try {
    res = await fetch(path, {
      method, headers, cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (_) {
    throw new ApiError(0, "network", t("errors.network"));
  }
  heardServerClock(res);
  let data = null;
  try { data = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    throw new ApiError(res.status, data && data.error, data && data.detail, data && data.field,
                       data && data.why, data);
  }
  return data;
}

// The guest of this device: created with `name` when there is none (with no name, the
// server makes one up in the page's language: `createPlayer` without `name`), renamed
// when the name changed (the same player: its seats, ratings and token stay).
export async function ensureGuest(name) {
  const g = guest();
  const wanted = (name || "").trim();
  if (g && (!wanted || wanted === g.name)) return g;
  if (g) {
    try {
      const renamed = await api("PUT", "/api/players/me", { name: wanted });
      const kept = { ...g, name: renamed.name };
      localStorage.setItem(GUEST_KEY, JSON.stringify(kept));
      return kept;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 401) throw err;
      // The server no longer knows this token (a new database): a new guest below.
    }
  }
  const made = await api("POST", "/api/players", wanted ? { name: wanted } : { lang });
  const fresh = { id: made.id, name: made.name, token: made.token };
  localStorage.setItem(GUEST_KEY, JSON.stringify(fresh));
  return fresh;
}

// ------------------------------------------------------------------ live sockets
// A WebSocket that comes back by itself: after a drop it waits 0.5 s, 1 s, 2 s … (at most
// 10 s, with some jitter) and opens again on `url()` (a function, so a match socket can
// ask for the events after the last one it saw). A connection that has gone dead
// without closing (a network that vanished) is found by a ping every 15 s that must be
// answered within 10 s; the browser going offline and online again is heeded at once.
// `onStatus` hears "connecting", "open", "waiting" (with the seconds until the next
// try) and "gone" (the server said the match or party does not exist).
export const PING_EVERY = 15000, PONG_WITHIN = 10000;
export function liveSocket({ url, onOpen, onFrame, onStatus }) {
  let socket = null;
  let attempt = 0;
  let timer = null;
  let closed = false;
  let countdown = null;
  let heartbeat = null;
  let lastHeard = 0;

  function open() {
    if (closed) return;
    clearTimeout(timer);
    clearInterval(countdown);
    onStatus && onStatus("connecting");
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}${url()}`);
    socket = ws;
    ws.addEventListener("open", () => {
      if (ws !== socket) return;
      lastHeard = Date.now();
      onStatus && onStatus("open");
      clearInterval(heartbeat);
      heartbeat = setInterval(() => {
        if (Date.now() - lastHeard > PING_EVERY + PONG_WITHIN) drop();
        else if (Date.now() - lastHeard > PING_EVERY) send({ type: "ping" });
      }, 1000);
      onOpen && onOpen(send);
    });
    ws.addEventListener("message", (e) => {
      if (ws !== socket) return;
      lastHeard = Date.now();
      let frame;
      try { frame = JSON.parse(e.data); } catch (_) { return; }
      // The backoff starts over only once the socket carries something: while the
      // database is away a socket opens, says 503 and closes (1011), and the retries
      // must keep slowing down, not come every half second from every page.
      if (frame.type !== "error") attempt = 0;
      if (frame.type !== "pong") onFrame(frame, send);
    });
    ws.addEventListener("close", (e) => {
      if (ws !== socket) return;  // a socket this one already gave up on
      socket = null;
      clearInterval(heartbeat);
      if (closed || e.code === 4404 || e.code === 4422) {
        if (!closed) onStatus && onStatus("gone", e.code);
        return;
      }
      retryLater();
    });
  }

  function retryLater() {
    const wait = Math.min(10, 0.5 * 2 ** attempt) * (0.8 + Math.random() * 0.4);
    attempt++;
    let left = Math.ceil(wait);
    onStatus && onStatus("waiting", left);
    countdown = setInterval(() => { left--; if (left > 0) onStatus && onStatus("waiting", left); }, 1000);
    timer = setTimeout(() => { clearInterval(countdown); open(); }, wait * 1000);
  }

  // Give up on the current connection (it may never say it closed) and try again.
  function drop() {
    const old = socket;
    socket = null;
    clearInterval(heartbeat);
    if (old) { try { old.close(4000, "no answer"); } catch (_) { /* already gone */ } }
    if (!closed) retryLater();
  }

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(message));
      return true;
    }
    return false;
  }

  const offline = () => { if (socket) drop(); };
  const online = () => { if (!socket && !closed) { attempt = 0; open(); } };
  window.addEventListener("offline", offline);
  window.addEventListener("online", online);
  open();
  return {
    send,
    close() {
      closed = true;
      clearTimeout(timer);
      clearInterval(countdown);
      clearInterval(heartbeat);
      window.removeEventListener("offline", offline);
      window.removeEventListener("online", online);
      if (socket) socket.close(1000);
      socket = null;
    },
    isOpen: () => !!socket && socket.readyState === WebSocket.OPEN,
  };
}

// ------------------------------------------------------------------ the page frame
// The header every site page shares, drawn into its empty <header class="site">: the
// brand, the links (the current page's marked), this device's guest, the language switch.
export function siteHeader() {
  const header = $("header.site");
  header.textContent = "";
  const brand = el("a", { class: "brand", href: "/" });
  brand.appendChild(el("span", { class: "dots", "aria-hidden": "true" }, "○□△✚"));
  brand.appendChild(el("span", { "data-t": "site" }));
  const nav = el("nav");
  let here = "/" + (location.pathname.split("/").filter(Boolean)[0] || "");
  if (here === "/tournament") here = "/tournaments";  // one arena: under the arenas
  for (const [href, key] of [["/", "lobby"], ["/tournaments", "arenas"], ["/leaderboard", "ratings"],
                             ["/rules", "rules_link"]]) {
    const link = el("a", { href, "data-t": key });
    if (href === here) link.setAttribute("aria-current", "page");
    nav.appendChild(link);
  }
  const right = el("div", { class: "right" });
  const g = guest();
  right.appendChild(el("span", { class: "me", id: "me" }, g ? g.name : ""));
  const button = el("button", { type: "button", class: "quiet", id: "lang", "data-t": "lang_switch" });
  // The button says the other language's name in that language ("English", "日本語"):
  // marked so, a screen reader pronounces it right (WCAG 3.1.2).
  const other = () => button.setAttribute("lang", lang === "ja" ? "en" : "ja");
  button.addEventListener("click", switchLanguage);
  document.addEventListener("languagechange", other);
  right.appendChild(button);
  header.append(brand, nav, right);
  translate();
  other();
}

// The status line under the header: "connecting", "reconnecting in 3 s", or hidden.
export function connectionStatus(state, seconds) {
  const box = $("#connection");
  if (!box) return;
  box.dataset.state = state;
  if (state === "open" || state === "gone") {  // gone: the page says why in its message
    box.hidden = true;
    return;
  }
  box.hidden = false;
  box.textContent = state === "connecting" ? t("connecting")
    : state === "waiting" ? t("reconnecting", { s: seconds }) : t("reconnecting_now");
}

// One event in words, as the table's log and the replay viewer both say it. `e` holds
// the event's facts: {type, seat, die, piece, from, to, captures, bonus, reason, retry,
// next_seat, place, first_seat, seed_hash}; `who(seat)` names a seat; `board` gives
// `home` and `goal`; `isMe(seat)` (optional) is true for this device's player's seat,
// whose events are said to them ("Your piece 2 moved", `ev.you.*`). Returns {text, kind}
// (kind "capture", "bonus", "turn" or ""), or null for a kind of event the page does not
// know.
export function eventWords(e, who, board, isMe) {
  // `key` said of `seat`: to the player when it is theirs, else with the seat's name.
  const say = (key, seat, vars) => (isMe && isMe(seat)
    ? t(`ev.you.${key}`, vars) : t(`ev.${key}`, { who: who(seat), ...vars }));
  switch (e.type) {
    case "MatchCreated": return { text: t("ev.created", { hash: e.seed_hash.slice(0, 16) }), kind: "turn" };
    case "MatchStarted": return { text: say("started", e.first_seat), kind: "" };
    case "DieRolled": return { text: say("rolled", e.seat, { die: e.die }), kind: "" };
    case "PieceMoved": {
      const piece = e.piece + 1, n = e.to - e.from;
      let text;
      if (e.from < 0) text = say("entered", e.seat, { piece });
      else if (e.to >= board.goal) text = say("to_goal", e.seat, { piece });
      else if (e.to >= board.home && e.from < board.home) text = say("to_home", e.seat, { piece });
      else text = say(n === 1 ? "moved_one" : "moved", e.seat, { piece, n });
      if (e.die === null || e.die === undefined) text += " " + t("ev.auto_enter");
      const captures = e.captures || [];
      for (const [seat] of captures) text += " " + say("captured", seat);
      if (e.bonus) text += " " + (e.bonus === 1 ? t("ev.bonus") : t("ev.bonus_n", { n: e.bonus }));
      return { text, kind: captures.length ? "capture" : e.bonus ? "bonus" : "" };
    }
    case "RollPassed":
      if (e.reason === "three_sixes") return { text: say("pass_sixes", e.seat), kind: "" };
      return { text: say(e.retry ? "pass_retry" : "pass_none", e.seat), kind: "" };
    case "TurnEnded": return { text: say("turn", e.next_seat), kind: "turn" };
    case "TurnTimedOut": return { text: say("timeout", e.seat), kind: "" };
    case "SeatStoodIn": return { text: say(`stand_in.${e.reason}`, e.seat), kind: "" };
    case "SeatReclaimed": return { text: say("reclaimed", e.seat), kind: "" };
    case "PlayerFinished": return { text: say("finished_player", e.seat, { n: e.place }), kind: "" };
    case "MatchConceded": return { text: say("conceded", e.seat), kind: "" };
    case "MatchFinished": return { text: t("ev.over"), kind: "" };
    case "SeedRevealed": return { text: t("ev.seed"), kind: "" };
    default: return null;
  }
}

// Where a piece at progress `p` stands, in words: the nest, the start, square n, the
// home column's n-th square, the goal (`model` is the board model).
export function spotName(model, p) {
  if (p < 0) return t("spot.nest");
  if (p >= model.goal) return t("spot.goal");
  if (p >= model.home) return t("spot.home_n", { n: p - model.last_track });
  return p === 0 ? t("spot.start") : t("spot.square_n", { n: p });
}

// The board's labels for board.js in the page's language: the board, each piece ("○Yellow
// Alice's piece 2, square 14"), each move offered. `model` is the board model,
// `who(seat)` names a seat.
export function boardLabels(model, who) {
  const where = (p) => spotName(model, p);
  const seatOf = (colour) => model.colours.indexOf(colour);
  return {
    board: t("spot.board"),
    piece: (colour, piece, p) => t("spot.piece", { who: who(seatOf(colour)), piece: piece + 1, where: where(p) }),
    move: (colour, move) => t("spot.move", { piece: move.piece + 1, from: where(move.from), to: where(move.to) }),
  };
}

// The text of one option's value: "あり"/"On", a choice's name, or the die faces.
export function optionValueText(key, value) {
  if (key === "enter_on") return value.join("・");
  if (key === "play_to_end" && value === false) return t("opt.play_to_end_off");
  if (typeof value === "boolean") return t(value ? "opt.on" : "opt.off");
  return t(`opt.${key}.values.${value}`);
}

// The rules of a party in words: the preset it matches, else the options changed from ours.
export function rulesSummary(rules, options) {
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  for (const [name, preset] of Object.entries(options.presets)) {
    if (Object.keys(preset).every((k) => same(preset[k], rules[k]))) return t(`preset_${name}`);
  }
  const base = options.presets[options.default];
  const changed = Object.keys(base).filter((k) => !same(base[k], rules[k]));
  return changed.map((k) => `${t(`opt.${k}.name`)}: ${optionValueText(k, rules[k])}`).join(" / ");
}

// ------------------------------------------------------------------ names of seats
// One naming of a seat for every page (lobby, table, replay viewer, dispute report): a
// guest by their own name, a CPU by its level in the page's language ("CPU（ふつう）" /
// "CPU (normal)"), never the server's stored "CPU 2 (normal)", which is English and
// numbered by seat; where the seat's colour is known it comes first ("□青 CPU（ふつう）"
// / "□Blue CPU (normal)"), as the board shows it.
export const cpuName = (level) => t(`cpu_level.${level}`);
export function seatLabel(seat) {
  if (!seat) return "";
  return seat.cpu ? cpuName(seat.cpu) : seat.name || "";
}
export const colourLabel = (colour) => `${SYMBOL[colour] || ""}${t(`colour.${colour}`)}`;
export function seatWho(seat) {
  if (!seat) return "";
  return seat.colour ? `${colourLabel(seat.colour)} ${seatLabel(seat)}` : seatLabel(seat);
}

// --------------------------------------------------------------- completion rates
// A player's completion rate (matches played to the end ÷ matches started, over the
// last 50) shown next to their name: `loadCompletionRates(ids)` asks the match service
// (`GET /api/players/reputation`, its own read: shown while the ranking service is
// away), and every name drawn by `completionTag` afterwards carries its rate.
export const completionRates = new Map();
export const completionListeners = [];
export function setCompletionRates(rates) {
  for (const [id, rate] of Object.entries(rates || {})) {
    if (typeof rate === "number" && rate >= 0 && rate <= 1) completionRates.set(id, rate);
  }
  for (const redraw of completionListeners) redraw();
}
// Called with a redraw function: it runs again whenever rates arrive.
export function onCompletionRates(redraw) { completionListeners.push(redraw); }
// A tag "完走率 96%" / "Finished 96%" for `playerId`, or null when no rate is known.
export function completionTag(playerId) {
  const rate = playerId ? completionRates.get(playerId) : undefined;
  if (rate === undefined) return null;
  return el("span", { class: "tag completion", "data-completion": String(rate) },
            t("completion", { n: Math.round(rate * 100) }));
}
// GET /api/players/reputation for `ids` (at most 100): {player_id: completion or null}.
// keepalive: a page reloaded or left while the answer is on its way does not abort it
// (the table asks nothing it would abandon, test_table.py).
export async function readCompletions(ids) {
  const r = await fetch(`/api/players/reputation?ids=${ids.map(encodeURIComponent).join(",")}`,
                        { keepalive: true, headers: { Accept: "application/json" } });
  if (!r.ok) throw new ApiError(r.status, "reputation", String(r.status));
  const out = {};
  for (const p of (await r.json()).players) out[p.player_id] = p.completion;
  return out;
}
export const completionAsked = new Set();
export async function loadCompletionRates(ids) {
  const wanted = [...new Set(ids)].filter((id) => id && !completionAsked.has(id)).slice(0, 100);
  if (!wanted.length) return;
  wanted.forEach((id) => completionAsked.add(id));
  try {
    const rates = {};
    for (const [id, c] of Object.entries(await readCompletions(wanted))) if (c) rates[id] = c.rate;
    setCompletionRates(rates);
  } catch { wanted.forEach((id) => completionAsked.delete(id)); }
}
// ---- end of site.js
