//! The PITR workbench in `update`: `:pitr` plans on the archive read, an out-of-window target
//! is refused naming the window, the remedies become restore proposals, and nothing is sent
//! without the confirm dialog's confirmation (never in read-only mode). Snapshots of the
//! workbench of every lab scenario with an archive, at 80x24 and 120x36.

use bloodraven_pitr::Token;
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::super::super::action::{Action, DataEvent, Effect, Intent};
use super::super::super::state::{DetailTab, Mode, Overlay, Screen, State};
use super::super::super::testing::{now, scenario_state};
use super::super::update;
use crate::archive::tests::lab_summary_with;
use crate::archive::{ArchiveOutcome, BackupAnchor};
use crate::ops::confirm::{DialogKey, Origin};
use crate::ops::send::decide;
use crate::ops::{Observed, Verdict, WriteOp};

fn key() -> (String, String) {
    ("orders".to_owned(), "orders".to_owned())
}

fn keys(state: &mut State, intents: &[Intent]) -> Vec<Effect> {
    intents.iter().flat_map(|intent| update(state, Action::Input(intent.clone()))).collect()
}

/// `:<command>` typed and submitted.
fn command(state: &mut State, text: &str) -> Vec<Effect> {
    let mut intents = vec![Intent::StartCommand];
    intents.extend(text.chars().map(Intent::Type));
    intents.push(Intent::Submit);
    keys(state, &intents)
}

fn sends(effects: &[Effect]) -> usize {
    effects.iter().filter(|effect| matches!(effect, Effect::Send { .. })).count()
}

/// `scenario` with its group open on the restore panel and its archive read (as `lab` lays it).
fn opened(scenario: &str) -> State {
    let mut state = scenario_state(scenario);
    keys(&mut state, &[Intent::Open, Intent::Tab(DetailTab::Restore.index())]);
    // The archive read as the console asks for it: with the group's MysqlBackups.
    let anchors: Vec<BackupAnchor> = state
        .data
        .backups
        .values()
        .filter(|backup| backup.spec.failover_group_ref.name == key().1)
        .map(BackupAnchor::of)
        .collect();
    let summary = lab_summary_with(scenario, &key(), Some(&anchors));
    let outcome = ArchiveOutcome::Covered(Box::new(summary));
    update(&mut state, Action::Data(DataEvent::Archive { key: key(), outcome, at: now() }));
    state
}

/// The archive's newest second: after the promoted site's writes, so the lab's backup (taken
/// before the lossy failover) is refused with the lost tail as D.
fn divergent_target(state: &State) -> String {
    let Some(ArchiveOutcome::Covered(summary)) = &state.data.archives[&key()].outcome else {
        panic!("the archive was not read")
    };
    let history = &summary.history.as_ref().unwrap().0;
    let newest = history.files.iter().flat_map(|file| file.txns()).filter_map(|txn| txn.commit);
    crate::archive::workbench::stop_time(newest.max().unwrap())
}

/// `:pitr <the divergent target>`.
fn divergent(state: &mut State) -> Vec<Effect> {
    let target = divergent_target(state);
    command(state, &format!("pitr {target}"))
}

fn computed(state: &State) -> &crate::archive::workbench::Computed {
    let bench = state.ui.workbench.as_ref().expect("the workbench is open");
    bench.outcome.as_ref().unwrap_or_else(|why| panic!("no plan: {why}"))
}

/// The divergent set of the lab's lossy failover: site iad's lost tail.
fn lost_tail(state: &State) -> String {
    let divergent = &computed(state).bench.divergent;
    assert_eq!(divergent.len(), 1, "{divergent:?}");
    divergent[0].gtids.to_compact_string()
}

#[test]
fn a_divergent_target_shows_d_and_the_three_remedies_each_planned() {
    let mut state = opened("pitr-divergent");
    let effects = divergent(&mut state);
    assert_eq!(sends(&effects), 0);
    // The workbench is drawn on the archive panel.
    assert_eq!(state.screen(), &Screen::Group { key: key(), tab: DetailTab::Archive });
    let computed = computed(&state);
    let refusal = computed.bench.verdict.as_ref().unwrap_err();
    assert_eq!(refusal.token, Token::ArchiveDivergentHistory, "{refusal}");
    assert_eq!(computed.bench.backup, "orders-nightly-20260419");
    assert_eq!(computed.bench.divergent[0].site, "iad");
    // Exclude D plans; an earlier target plans; no later backup exists.
    let choices = &computed.bench.choices;
    assert_eq!(choices.len(), 3);
    assert!(choices[0].verdict.is_ok(), "{:?}", choices[0].verdict);
    assert!(choices[1].verdict.is_ok(), "{:?}", choices[1].verdict);
    assert!(choices[2].request.is_none(), "{:?}", choices[2]);
    let tail = lost_tail(&state);
    assert_eq!(choices[0].request.as_ref().unwrap().exclude_gtids, tail);
}

#[test]
fn pitr_alone_reopens_the_groups_own_bootstrap_request() {
    let mut state = opened("pitr-divergent");
    command(&mut state, "pitr");
    let bench = state.ui.workbench.as_ref().expect("open");
    // The scenario's request, as written in spec.initFromBackup.
    assert_eq!(bench.target, "2026-04-20T12:00:00Z");
    assert_eq!(bench.backup.as_deref(), Some("orders-nightly-20260419"));
    // On a group without one, `:pitr` alone says how to ask.
    let mut state = opened("archive-gap");
    command(&mut state, "pitr");
    assert!(state.ui.workbench.is_none());
    assert!(
        state.ui.message.as_deref().unwrap_or_default().contains(":pitr"),
        "{:?}",
        state.ui.message
    );
}

#[test]
fn a_target_outside_the_window_is_refused_naming_the_window() {
    let mut state = opened("pitr-divergent");
    divergent(&mut state);
    let window = computed(&state).window.clone();
    let start = crate::archive::workbench::stop_time(window.start);
    // A second before the window: refused before planning, the window named.
    let before = window.start.checked_sub(jiff::SignedDuration::from_secs(1)).unwrap();
    let effects =
        command(&mut state, &format!("pitr {}", crate::archive::workbench::stop_time(before)));
    assert_eq!(sends(&effects), 0);
    let why = state.ui.workbench.as_ref().unwrap().outcome.as_ref().unwrap_err();
    assert!(why.contains("outside the window"), "{why}");
    assert!(why.contains(&format!("window is {start} ->")), "{why}");
    // After the newest archived commit: nothing witnesses it.
    command(&mut state, "pitr 2030-01-01T00:00:00Z");
    let why = state.ui.workbench.as_ref().unwrap().outcome.as_ref().unwrap_err();
    assert!(why.contains("outside the window") && why.contains("PITRTargetNotCovered"), "{why}");
    // And nothing is offered to propose.
    keys(&mut state, &[Intent::Guided]);
    assert!(state.guided.overlay.is_none());
    assert!(state.ui.message.as_deref().unwrap_or_default().contains("no guided operation"));
    // A mistyped target is said on the status line, and the workbench is left as it was.
    command(&mut state, "pitr yesterday");
    assert!(state.ui.message.as_deref().unwrap_or_default().contains("neither a time"));
}

#[test]
fn a_gtid_target_restores_through_that_transaction() {
    let mut state = opened("pitr-divergent");
    divergent(&mut state);
    let earlier = computed(&state).bench.choices[1].verdict.clone().unwrap();
    let witness = earlier.witness.unwrap();
    command(&mut state, &format!("pitr {}", witness.gtid));
    let computed = computed(&state);
    let (gtid, committed) = computed.through.clone().unwrap();
    assert_eq!(gtid, witness.gtid);
    assert_eq!(committed, witness.committed);
    let plan = computed.bench.verdict.as_ref().unwrap();
    assert!(plan.certified.contains(&witness.gtid.parse().unwrap()), "{plan:?}");
}

#[test]
fn exclude_d_is_proposed_and_only_the_confirm_sends_it() {
    let mut state = opened("pitr-divergent");
    divergent(&mut state);
    let tail = lost_tail(&state);
    // Read-only: the picker offers the plannable remedies; the dialog opens; nothing is sent.
    let mut effects = keys(&mut state, &[Intent::Guided]);
    let Some(Overlay::Picker(picker)) = &state.guided.overlay else {
        panic!("no picker: {:?}", state.ui.message)
    };
    assert_eq!(picker.choices.len(), 2, "{:?}", picker.choices);
    let WriteOp::RestorePitrToNewGroup { exclude_gtids, name, backup, archive_profile, .. } =
        &picker.choices[0].op
    else {
        panic!("{:?}", picker.choices[0].op)
    };
    assert_eq!(exclude_gtids, &tail);
    assert_eq!(backup, "orders-nightly-20260419");
    assert_eq!(archive_profile, "nightly");
    assert!(name.starts_with("orders-pitr-"), "{name}");
    assert!(
        matches!(&picker.choices[0].origin, Origin::Screen(screen) if screen.contains("exclude D")),
        "{:?}",
        picker.choices[0].origin
    );
    effects.extend(keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]));
    assert_eq!(state.ui.mode, Mode::Dialog);
    let dialog = state.guided.dialog().expect("the confirm dialog");
    let op = dialog.dialog.prepared.op.clone();
    assert!(effects.iter().any(|effect| matches!(effect, Effect::Review { .. })), "{effects:?}");
    effects.extend(keys(
        &mut state,
        &[Intent::Dialog(DialogKey::Switch), Intent::Dialog(DialogKey::Enter)],
    ));
    assert_eq!(sends(&effects), 0, "read-only never sends: {effects:?}");

    // Write mode: the same proposal is sent only on Confirm, exactly once.
    state.guided.overlay = None;
    state.ui.mode = Mode::Detail;
    state.guided.write.capable = true;
    state.guided.write.on = true;
    let mut effects = keys(&mut state, &[Intent::Guided, Intent::Dialog(DialogKey::Enter)]);
    assert_eq!(sends(&effects), 0, "{effects:?}");
    // The runtime's fresh read: the group and the backup.
    let serial = state.guided.dialog().unwrap().serial;
    let observed = Observed {
        group: Some((*state.data.groups[&key()]).clone()),
        backup: state
            .data
            .backups
            .get(&("orders".to_owned(), "orders-nightly-20260419".into()))
            .cloned(),
        rotating_sites: Vec::new(),
    };
    let prepared = decide(op, observed, state.now);
    assert_eq!(prepared.preflight.verdict(), Verdict::Pass, "{}", prepared.preflight.render());
    let patch = prepared.patch.clone().unwrap();
    assert_eq!(patch.path, "/apis/shipstream.io/v1alpha1/namespaces/orders/mysqlfailovergroups");
    assert_eq!(patch.body["spec"]["initFromBackup"]["pointInTime"]["excludeGtids"], tail.as_str());
    effects.extend(update(
        &mut state,
        Action::Reviewed { serial, result: Ok(Box::new((prepared, Some(allowed())))) },
    ));
    effects.extend(keys(&mut state, &[Intent::Dialog(DialogKey::Switch)]));
    assert_eq!(sends(&effects), 0, "{effects:?}");
    effects.extend(keys(&mut state, &[Intent::Dialog(DialogKey::Enter)]));
    assert_eq!(sends(&effects), 1, "{effects:?}");
}

fn allowed() -> crate::ops::send::Access {
    crate::ops::send::Access {
        user: Some("alice@example.com".to_owned()),
        allowed: Some(true),
        reason: None,
    }
}

#[test]
fn esc_closes_the_workbench_before_leaving_the_group() {
    let mut state = opened("pitr-divergent");
    divergent(&mut state);
    keys(&mut state, &[Intent::Back]);
    assert!(state.ui.workbench.is_none());
    assert_eq!(state.screen(), &Screen::Group { key: key(), tab: DetailTab::Archive });
    keys(&mut state, &[Intent::Back]);
    assert_eq!(state.screen(), &Screen::Fleet);
}

// ---- snapshots: the workbench of every lab scenario with an archive ----

fn draw(state: &State) -> String {
    let mut out = String::new();
    for (width, height) in [(80, 24), (120, 36)] {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| super::super::super::view::render(state, frame)).unwrap();
        out.push_str(&format!("--- {width}x{height} ---\n"));
        out.push_str(&terminal.backend().to_string());
    }
    out
}

#[test]
fn snapshots_of_the_workbench() {
    // pitr-divergent: the refused bootstrap request, its D and its three remedies.
    let mut state = opened("pitr-divergent");
    divergent(&mut state);
    insta::assert_snapshot!("workbench_pitr_divergent", draw(&state));
    // Scrolled to the remedies.
    keys(&mut state, &[Intent::PageDown]);
    insta::assert_snapshot!("workbench_pitr_divergent_remedies", draw(&state));
    // Its exclude-D choice asked for directly: it plans.
    let tail = lost_tail(&state);
    let target = computed(&state).stop_time.clone();
    command(&mut state, &format!("pitr {target} exclude={tail}"));
    assert!(computed(&state).bench.verdict.is_ok());
    insta::assert_snapshot!("workbench_pitr_divergent_excluded", draw(&state));

    // archive-gap: a target inside the window, and one outside it.
    let mut state = opened("archive-gap");
    let window = match &state.data.archives[&key()].outcome {
        Some(ArchiveOutcome::Covered(summary)) => summary.backups[0].window.clone().unwrap(),
        other => panic!("archive-gap has no window: {other:?}"),
    };
    command(&mut state, &format!("pitr {}", crate::archive::workbench::stop_time(window.start)));
    insta::assert_snapshot!("workbench_archive_gap", draw(&state));
    command(&mut state, "pitr 2030-01-01T00:00:00Z");
    insta::assert_snapshot!("workbench_archive_gap_outside", draw(&state));
}

#[test]
fn the_exclude_d_preview_names_the_review_file_the_confirm_writes() {
    let mut state = opened("pitr-divergent");
    divergent(&mut state);
    state.guided.write.capable = true;
    state.guided.write.on = true;
    let journal = std::path::PathBuf::from("/home/alice/.local/state/bloodraven/journal");
    state.guided.write.journal_dir = Some(journal.clone());
    keys(&mut state, &[Intent::Guided, Intent::Dialog(DialogKey::Enter)]);
    let dialog = &state.guided.dialog().expect("the confirm dialog").dialog;
    let WriteOp::RestorePitrToNewGroup { name, .. } = &dialog.prepared.op else {
        panic!("{:?}", dialog.prepared.op)
    };
    // The same file the send saves (`ops::review::save`), named before the confirm.
    let expected = journal.join("restores").join(format!("{name}.yaml"));
    assert_eq!(dialog.review_file.as_ref(), Some(&expected));
    assert_eq!(crate::ops::review::path(&journal, &dialog.prepared.op).as_ref(), Some(&expected));
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    terminal.draw(|frame| super::super::super::view::render(&state, frame)).unwrap();
    let screen = terminal.backend().to_string();
    let shown = screen.lines().any(|line| line.contains(&format!("restores/{name}.yaml")));
    assert!(shown, "the preview does not name the review file:\n{screen}");
    insta::assert_snapshot!("workbench_pitr_divergent_exclude_d_dialog", screen);

    // Without a resolvable journal folder the dialog names no file (and claims none).
    state.guided.overlay = None;
    state.ui.mode = Mode::Detail;
    state.guided.write.journal_dir = None;
    keys(&mut state, &[Intent::Guided, Intent::Dialog(DialogKey::Enter)]);
    assert_eq!(state.guided.dialog().expect("the confirm dialog").dialog.review_file, None);
}
