"""The `agentk` command line: run, grade, bench, campaign, report, demo."""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.table import Table

from agentk.cli_common import choice, console, fail, fmt, given, guard
from agentk.core.records.config import Device, Fusion, PolicyName, RunConfig, SolveSettings, deep_merge, default_of
from agentk.core.errors import AgentKError
from agentk.core.records.workspace import Workspace

if TYPE_CHECKING:
    from agentk.core.records.results import RunResult

# Each command imports what it runs inside its body: the runner, grader and bench pull in pandas
# and scipy (about 2.5 s on 2 cores), which `agentk --help` and a mistyped flag should not wait for.

app = typer.Typer(add_completion=False, no_args_is_help=True, help="agentk: an autonomous Kaggle competitor.")

# Options default to None, "not given": RunConfig's defaults are the only ones (the help shows them).
WorkspaceRoot = typer.Option(None, "--workspace-root", "-w",
                             help=f"Where workspaces are created (default: {default_of(RunConfig, 'workspace_root')}).")
ImageBackbone = typer.Option(None, "--image-backbone", help=(
    "Your own image model, used before the bundled EfficientNet-Lite when its timed probe fits the budget: "
    "a Hugging Face (transformers) or timm model's folder, or a repo id already in the local hub cache. Never downloaded."))


def _root(workspace_root: Path | None) -> Path:
    return RunConfig(**given(workspace_root=workspace_root)).workspace_root


def _over_base(path: Path, flags: RunConfig) -> RunConfig:
    """The RunConfig saved in `path` with the flags that were given laid over it, field by field."""
    from pydantic import ValidationError

    try:
        base = RunConfig.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AgentKError(f"cannot read --config-json {path}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        raise AgentKError(f"--config-json {path} is not a run config: {exc.errors()[0]['msg']}") from None
    return RunConfig.model_validate(deep_merge(base.model_dump(mode="json"), flags.model_dump(mode="json", exclude_unset=True)))


def _image_backbone(value: str | None) -> str | None:
    """An existing folder as an absolute path (the saved config must not depend on the current
    folder), or a hub repo id; a typo fails now, not after the setup."""
    from agentk.core.local_image_models import named_setting

    if value is None:
        return None
    try:
        return named_setting(value)
    except ValueError as error:
        fail(str(error))


@app.command()
def run(
    source: str = typer.Argument(..., help="A competition folder (local or MLE-bench prepared layout), a Kaggle URL or a slug."),
    workspace_root: Optional[Path] = WorkspaceRoot,
    time_budget: Optional[float] = typer.Option(None, "--time-budget", help=f"Solver time budget in seconds (default: {default_of(SolveSettings, 'time_budget_s'):g})."),
    folds: Optional[int] = typer.Option(None, "--folds", help=f"Cross-validation folds (default: {default_of(SolveSettings, 'folds')})."),
    fusion: Optional[str] = typer.Option(None, "--fusion", help=f"Late-fusion net: auto (text/image inputs only), on (tables too), off (default: {default_of(SolveSettings, 'fusion')})."),
    no_tune: bool = typer.Option(False, "--no-tune", help="Skip HEBO tuning."),
    setup_deadline: Optional[float] = typer.Option(None, "--setup-deadline", help="Seconds setup may take from the run's start; past it the run hands in the sample submission (default: twice --time-budget, at least 180)."),
    device: Optional[str] = typer.Option(None, "--device", help=f"Where images, text and the fusion net run: auto (a CUDA GPU when there is one), cpu, cuda (default: {default_of(SolveSettings, 'device')})."),
    seed: Optional[int] = typer.Option(None, "--seed", help=f"(default: {default_of(SolveSettings, 'seed')})"),
    image_backbone: Optional[str] = ImageBackbone,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the final line (for campaigns)."),
    as_json: bool = typer.Option(False, "--json", help="Print result.json to stdout."),
    submit: bool = typer.Option(False, "--submit", help="Kaggle only: submit the validated submission and report its rank."),
    force_submit: bool = typer.Option(False, "--force-submit", help="Send the file even if this exact file was sent before."),
    top_k: Optional[int] = typer.Option(None, "--top-k", min=1, help=f"With --submit: send the K best models by validation score, best first (default: {default_of(RunConfig, 'submit_top_k')})."),
    submit_poll: Optional[float] = typer.Option(None, "--submit-poll", help=f"Seconds between polls for the Kaggle score (default: {default_of(RunConfig, 'submit_poll_s'):g})."),
    kernel_timeout: Optional[float] = typer.Option(None, "--kernel-timeout", help=f"With --submit on a code competition: seconds to wait for the Kaggle kernel that runs the predictor (default: {default_of(RunConfig, 'kernel_timeout_s'):g})."),
    kernel_wheels: Optional[Path] = typer.Option(None, "--kernel-wheels", help="With --submit on a code competition: a folder of wheels for the kernel, used instead of downloading them (offline)."),
    policy: Optional[str] = typer.Option(None, "--policy", help="expert | llm | hybrid (default: hybrid when an LLM is configured, else expert)."),
    llm: Optional[str] = typer.Option(None, "--llm", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (vllm serve)."),
    model: Optional[str] = typer.Option(None, "--model", "--llm-model", help="The served model name."),
    token_budget: Optional[int] = typer.Option(None, "--token-budget", help="Most LLM tokens a run may spend."),
    no_credit_assignment: bool = typer.Option(False, "--no-credit-assignment", help="After a failed meta check, rewrite every covered stage."),
    llm_solve: Optional[bool] = typer.Option(None, "--llm-solve/--no-llm-solve", help="Let the LLM choose the solver's actions too (tune, race, feature code, bag, blend, stop; default: on with --policy llm or hybrid, never with the expert)."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help="Run LLM-written code even where no sandbox (bubblewrap) can be made."),
    leaderboard: Optional[Path] = typer.Option(None, "--leaderboard", help="A Kaggle leaderboard CSV to place the test score on (default: the competition's leaderboard.csv, if any)."),
    metric: Optional[str] = typer.Option(None, "--metric", help="For data without a competition page (a folder of files, a zip): the metric, e.g. rmse, auc, accuracy (default: assumed from the data, and said)."),
    config_json: Optional[Path] = typer.Option(None, "--config-json", hidden=True, help="For campaigns: a RunConfig JSON file as the base (a warm start has no flag); the other flags override it."),
) -> None:
    """Set up and solve one competition, write a validated submission, grade it when answers exist."""
    from agentk.runner import run_competition

    chosen_policy = choice(PolicyName, "--policy", policy)
    chosen_fusion = choice(Fusion, "--fusion", fusion)
    # The switches' False means "not given" too: only a set switch changes the config.
    config = RunConfig(**given(
        workspace_root=workspace_root, time_budget_s=time_budget, folds=folds, seed=seed, quiet=quiet or None,
        setup_deadline_s=setup_deadline, fusion=chosen_fusion, tune=False if no_tune else None, device=choice(Device, "--device", device),
        submit=submit or None, force_submit=force_submit or None, submit_top_k=top_k, submit_poll_s=submit_poll,
        kernel_timeout_s=kernel_timeout, kernel_wheels=kernel_wheels.resolve() if kernel_wheels is not None else None,
        policy=chosen_policy, llm_base_url=llm, llm_model=model, llm_token_budget=token_budget,
        credit_assignment=False if no_credit_assignment else None, unsafe_no_sandbox=unsafe_no_sandbox or None,
        llm_solve=llm_solve, leaderboard=leaderboard.resolve() if leaderboard is not None else None, metric=metric,
        image_backbone=_image_backbone(image_backbone),
    ))
    if leaderboard is not None and not leaderboard.is_file():
        fail(f"leaderboard file not found: {leaderboard}")
    if config_json is not None:
        config = guard(lambda: _over_base(config_json, config))
    outcome = guard(lambda: run_competition(source, config), config.workspace_root)
    if as_json:
        console.print_json(json.dumps(outcome.result.to_json()))
    elif quiet:
        r = outcome.result
        console.print(f"{r.competition_id}: valid={r.valid_submission} validation={fmt(r.validation_score)} test={fmt(r.test_score)} → {r.submission_path}", soft_wrap=True)
    else:
        _print_result(outcome.result)


@app.command()
def grade(
    competition: str = typer.Argument(..., help="The competition folder (holds the answers)."),
    submission: Path = typer.Argument(..., help="The submission CSV to score."),
    leaderboard: Optional[Path] = typer.Option(None, "--leaderboard", help="A Kaggle leaderboard CSV for rank and medal (default: the competition's leaderboard.csv, if any)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Score a submission against a competition's answers (the grader is the only reader of answers)."""
    from agentk.grading import grade_file, grade_note
    from agentk.sources import load_competition

    def body():
        if not submission.is_file():
            raise AgentKError(f"submission file not found: {submission}")
        if leaderboard is not None and not leaderboard.is_file():
            raise AgentKError(f"leaderboard file not found: {leaderboard}")
        loaded = load_competition(competition)
        # The competition's own leaderboard file (MLE-bench keeps one) unless another is given.
        return grade_file(submission, loaded, leaderboard or loaded.leaderboard_path)

    report = guard(body)
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
    else:
        line = f"{report.competition_id}: {report.metric} = {fmt(report.score)}" if report.valid else f"{report.competition_id}: invalid submission: {report.error}"
        console.print(line)
        if report.valid and report.answers_missing:
            console.print(f"note: {grade_note(report)}")
        if report.leaderboard is not None:
            lb = report.leaderboard
            console.print(f"rank {lb.rank}/{lb.n_teams}, beats {lb.percentile:.1%} of teams, medal: {lb.medal or 'none'}")
    if not report.valid:
        raise typer.Exit(1)


@app.command()
def submit(
    competition: str = typer.Argument(..., help="The Kaggle competition (URL or slug)."),
    file: Optional[Path] = typer.Argument(None, help="The CSV to send (default: the run's validated submission)."),
    message: Optional[str] = typer.Option(None, "--message", "-m", help="Submission message (default: model and validation score)."),
    workspace_root: Optional[Path] = WorkspaceRoot,
    force: bool = typer.Option(False, "--force", help="Send the file even if this exact file was sent before."),
    poll: float = typer.Option(default_of(RunConfig, "submit_poll_s"), "--submit-poll", min=0.001, help="Seconds between polls for the Kaggle score."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Submit a locally validated file to Kaggle, wait for its score and place it on the leaderboard."""
    from agentk.core.records.workspace_lock import workspace_lock
    from agentk.kaggle.reference import parse_competition_reference
    from agentk.publish import submit_run

    def body():
        slug = parse_competition_reference(competition)
        if slug is None:
            raise AgentKError(f"not a Kaggle competition: {competition}")
        workspace = Workspace(_root(workspace_root).resolve() / slug)
        # A run may be writing the files being sent (or sending them); no folder: none to lock or leave behind.
        with workspace_lock(workspace.root) if workspace.root.is_dir() else nullcontext():
            return submit_run(workspace, slug, file=file, message=message, force=force, interval_s=poll)

    report = guard(body)
    if as_json:
        console.print_json(json.dumps(report))
        return
    console.print(f"submission {report['ref']}: {report['status']}, public score {fmt(report['public_score'])}, private score {fmt(report['private_score'])}")
    if report["leaderboard"]:
        lb = report["leaderboard"]
        console.print(f"rank {lb['rank']}/{lb['n_teams']}, beats {lb['percentile']:.1%} of teams, medal: {lb['medal'] or 'none'}")


@app.command()
def leaderboard(
    competition: str = typer.Argument(..., help="The Kaggle competition (URL or slug)."),
    score: Optional[float] = typer.Option(None, "--score", help="Place this score (default: our best public score)."),
    lower_is_better: bool = typer.Option(False, "--lower-is-better", help="The metric decreases as it improves."),
    workspace_root: Optional[Path] = WorkspaceRoot,
) -> None:
    """Download the public leaderboard and place a score on it (rank, percentile, medal)."""
    from agentk.core.metrics.direction import Direction
    from agentk.core.records.results import RunResult
    from agentk.grading import leaderboard_position
    from agentk.kaggle.client import KaggleClient
    from agentk.kaggle.reference import parse_competition_reference
    from agentk.publish import ledger_for

    def body():
        slug = parse_competition_reference(competition)
        if slug is None:
            raise AgentKError(f"not a Kaggle competition: {competition}")
        workspace = Workspace(_root(workspace_root).resolve() / slug)
        keep = workspace.submissions if workspace.root.exists() else None
        board = KaggleClient().leaderboard(slug, keep_dir=keep)
        run = RunResult.read(workspace.result_path)
        recorded = run.direction if run is not None else None
        # The flag wins; without it the run's recorded direction, and with no run to say, higher
        # (the flag exists for the metrics that go the other way).
        direction = Direction(False) if lower_is_better else recorded or Direction(True)
        ours = score
        if ours is None and workspace.root.exists():
            ours = direction.best_score(e.record.public_score for e in ledger_for(workspace).entries())
        return board, ours, (leaderboard_position(ours, board, direction.higher_is_better) if ours is not None else None)

    board, ours, position = guard(body)
    console.print(f"{len(board)} teams on the public leaderboard")
    if position is not None:
        console.print(f"score {fmt(ours)}: rank {position.rank}/{position.n_teams}, beats {position.percentile:.1%} of teams, medal: {position.medal or 'none'}")


@app.command()
def bench(
    sources: list[str] = typer.Argument(None, help="Competition folders, or folders of competition folders. Default: the embedded demo."),
    workspace_root: Path = typer.Option(Path("workspaces/bench"), "--workspace-root", "-w"),
    time_budget: float = typer.Option(300.0, "--time-budget", help="Seconds per competition, the same for agentk's solver and every rival."),
    folds: Optional[int] = typer.Option(None, "--folds", help=f"Cross-validation folds (default: {default_of(SolveSettings, 'folds')})."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", "--json", help="Also write every row as JSON here."),
    seeds: int = typer.Option(1, "--seeds", min=1, help="Runs per competition; reports per-stage success rates and Pass@1/3/10."),
    rivals: Optional[str] = typer.Option(None, "--rivals", help="Rivals run side by side on the same split and budget: lightgbm,autogluon (default), a subset, or none."),
    splits: int = typer.Option(1, "--splits", min=1, help="Held-out splits per split competition (seeds 0..N-1); scores are averaged over them."),
    autogluon_python: Optional[Path] = typer.Option(None, "--autogluon-python", help="AutoGluon's interpreter (default: $AGENTK_AUTOGLUON_PYTHON or .venv-autogluon from `make autogluon`)."),
    policy: Optional[str] = typer.Option(None, "--policy", help="expert | llm | hybrid."),
    llm: Optional[str] = typer.Option(None, "--llm", help="OpenAI-compatible base URL."),
    model: Optional[str] = typer.Option(None, "--model", "--llm-model", help="The served model name."),
    campaign: bool = typer.Option(False, "--campaign", help="Run a campaign per order over the sources (folders, folders of them, task files) "
                                                            "and report tasks solved against wall time and LLM tokens (Agent K's Figure 14)."),
    orders: Optional[str] = typer.Option(None, "--orders", help="With --campaign: fixed,random,heuristic,curriculum (default: all four), or a subset."),
    warm_vs_cold: bool = typer.Option(True, "--warm-vs-cold/--no-warm-vs-cold", help="With --campaign: run the curriculum again without warm starts and compare."),
    medals: Optional[Path] = typer.Option(None, "--medals", help="Medal thresholds (MLE-bench's medals.json: gold/silver/bronze/median per competition id): each test score gets its medal."),
    holdout_repeats: int = typer.Option(0, "--holdout-repeats", min=0, help="Judge the solver's choice rules: R seeded splits of each split competition's train into a training and a "
                                                                          "held-out part, one run each, every kept candidate graded on the held-out part, each rule's pick compared."),
    holdout_fraction: float = typer.Option(0.3, "--holdout-fraction", min=0.05, max=0.5, help="With --holdout-repeats: the share of train held out (0.3: 267 of titanic's 891 rows, a held-out score worth comparing)."),
) -> None:
    """Run competitions and print setup attempts per stage, time to a valid submission and scores;
    with rivals, agentk against LightGBM defaults and AutoGluon side by side; with --campaign, the
    orders of a campaign and warm vs cold solver starts."""
    from agentk.bench.command import bench_campaigns, bench_competitions, bench_holdout

    run_config = given(time_budget_s=time_budget, folds=folds, policy=choice(PolicyName, "--policy", policy),
                       llm_base_url=llm, llm_model=model)
    if campaign:
        if rivals is not None or seeds > 1 or splits > 1:
            fail("--campaign runs campaigns, not rivals, seeds or splits: leave out --rivals, --seeds and --splits")
        if not bench_campaigns(sources or [], workspace_root, output, orders, warm_vs_cold, run_config):
            raise typer.Exit(1)  # no order solved anything: the bench measured nothing
        return
    if autogluon_python is not None and not autogluon_python.is_file():
        fail(f"--autogluon-python: no such file: {autogluon_python}")
    run_config = {**given(workspace_root=workspace_root, quiet=True), **run_config}
    if holdout_repeats:
        if rivals is not None or seeds > 1 or splits > 1:
            fail("--holdout-repeats makes its own splits and compares choice rules: leave out --rivals, --seeds and --splits")
        if not bench_holdout(sources or [], run_config, holdout_repeats, holdout_fraction, output):
            raise typer.Exit(1)  # no repeat could be scored
        return
    if not bench_competitions(sources or [], run_config, seeds=seeds, rivals=rivals, splits=splits,
                              autogluon_python=autogluon_python, medals=medals, output=output):
        raise typer.Exit(1)


@app.command()
def campaign(
    sources: list[str] = typer.Argument(None, help="Competition folders, folders of them, task files (one Kaggle URL/slug or folder a line), "
                                                  "kaggle:CATEGORY[:SEARCH]. `agentk campaign status DIR` shows a campaign."),
    name: Optional[str] = typer.Option(None, "--name", help="The campaign's name (default: from the first source)."),
    campaign_dir: Optional[Path] = typer.Option(None, "--campaign-dir", help="The campaign folder (default: WORKSPACE_ROOT/_campaigns/NAME)."),
    workspace_root: Optional[Path] = WorkspaceRoot,
    order: Optional[str] = typer.Option(None, "--order", help="fixed | random | heuristic (simplest tree first) | curriculum (default)."),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="Curriculum: weight of the tree (difficulty) similarity."),
    beta: Optional[float] = typer.Option(None, "--beta", help="Curriculum: weight of the penalty on a task that failed recently."),
    top_r: Optional[int] = typer.Option(None, "--r", help="Curriculum: how many nearest memories each similarity averages."),
    max_attempts: Optional[int] = typer.Option(None, "--max-attempts", min=1, help="Tries per task before it leaves the pool (default: 2)."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=1, max=100, help="Independent runs of each task, each its own seed and workspace; the report's Table 4 gives Pass@1/3/10 (default: 1)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Most tasks taken into the pool."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Tasks run at once, each with its share of the cores (default: 1)."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Run tasks on this Ray cluster (auto, ray://HOST:10001)."),
    time_budget: Optional[float] = typer.Option(None, "--time-budget", help=f"Solver seconds per task (default: {default_of(SolveSettings, 'time_budget_s'):g})."),
    total_budget: Optional[str] = typer.Option(None, "--total-budget", help="No task starts after this much wall time: 600, 90m, 8h."),
    folds: Optional[int] = typer.Option(None, "--folds", help="Cross-validation folds per task."),
    device: Optional[str] = typer.Option(None, "--device", help=f"Where images, text and the fusion net run: auto (a CUDA GPU when there is one), cpu, cuda (default: {default_of(SolveSettings, 'device')})."),
    seed: Optional[int] = typer.Option(None, "--seed", help="The random order's seed and the runs' solver seed."),
    image_backbone: Optional[str] = ImageBackbone,
    cold: bool = typer.Option(False, "--cold", help="No warm start from the nearest solved tasks."),
    submit: bool = typer.Option(False, "--submit", help="Submit each Kaggle task's validated submission (daily limits kept across the campaign)."),
    top_k: Optional[int] = typer.Option(None, "--top-k", min=1, help="With --submit: the K best models per task."),
    submit_poll: Optional[float] = typer.Option(None, "--submit-poll", help="Seconds between polls for a Kaggle score."),
    policy: Optional[str] = typer.Option(None, "--policy", help="expert | llm | hybrid."),
    llm: Optional[str] = typer.Option(None, "--llm", help="OpenAI-compatible base URL."),
    model: Optional[str] = typer.Option(None, "--model", "--llm-model", help="The served model name."),
    token_budget: Optional[int] = typer.Option(None, "--token-budget", help="Most LLM tokens each run may spend."),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox", help="Run LLM-written code even where no sandbox can be made."),
) -> None:
    """Run many competitions unattended, the next one chosen by the curriculum; the same command resumes."""
    from agentk.campaign.command import campaign_status, run_campaign_command
    from agentk.campaign.state import TaskStatus

    sources = list(sources or [])
    if sources[:1] == ["status"]:
        if len(sources) != 2:
            fail("usage: agentk campaign status CAMPAIGN_DIR")
        console.print(guard(lambda: campaign_status(Path(sources[1]))))
        return
    chosen_policy = choice(PolicyName, "--policy", policy)
    run_config = given(
        workspace_root=workspace_root, time_budget_s=time_budget, folds=folds, seed=seed, submit=submit or None,
        device=choice(Device, "--device", device), submit_top_k=top_k, submit_poll_s=submit_poll, policy=chosen_policy, llm_base_url=llm, llm_model=model,
        llm_token_budget=token_budget, unsafe_no_sandbox=unsafe_no_sandbox or None,
        image_backbone=_image_backbone(image_backbone),
    )
    campaign_options = given(order=order, alpha=alpha, beta=beta, r=top_r, max_attempts=max_attempts, seeds=seeds, limit=limit,
                             workers=workers, ray_address=ray_address, total_budget=total_budget, seed=seed, warm_start=False if cold else None)
    state = guard(lambda: run_campaign_command(sources, name=name, campaign_dir=campaign_dir, run_config=run_config, given=campaign_options))
    if not state.by_status(TaskStatus.SOLVED):
        raise typer.Exit(1)  # a campaign that solved nothing did not do its job


@app.command()
def demo(
    workspace_root: Optional[Path] = WorkspaceRoot,
    time_budget: float = typer.Option(60.0, "--time-budget", help="Solver time budget in seconds."),
) -> None:
    """Build the embedded demo competition (no network, no credentials) and solve it."""
    from agentk.runner import run_competition
    from agentk.sources.demo import make_demo_competition

    def body():
        config = RunConfig(**given(workspace_root=workspace_root, time_budget_s=time_budget))
        source = make_demo_competition(Path(config.workspace_root).resolve() / "_sources" / "demo")
        return run_competition(source, config)

    _print_result(guard(body).result)


@app.command(name="export")
def export_command(
    workspace: Path = typer.Argument(..., help="A run's workspace (workspaces/NAME)."),
    out: Optional[Path] = typer.Argument(None, help="The folder to write (default: ./NAME-predictor, NAME the workspace's)."),
) -> None:
    """Write the run's submission as a predictor to take away: `python OUT/predict.py TEST_DIR SUB.csv`."""
    from solve_pipeline.export.bundle import export

    target = out or Path.cwd() / f"{workspace.resolve().name}-predictor"
    done = guard(lambda: export(workspace, target))
    console.print(f"{done.out}: {', '.join(f'{t}={m}' for t, m in done.models.items())}; "
                  f"run: python {done.out / 'predict.py'} TEST_DIR SUBMISSION.csv", soft_wrap=True, markup=False)


@app.command()
def predict(
    workspace: Path = typer.Argument(..., help="A run's workspace (workspaces/NAME)."),
    test_dir: Path = typer.Argument(..., help="Test files laid out as the competition's data folder."),
    out: Path = typer.Option(Path("submission.csv"), "--out", "-o", help="The submission to write."),
) -> None:
    """Write the submission the run's models make for the test files in TEST_DIR."""
    from solve_pipeline.export.workspace_predict import predict_workspace

    console.print(str(guard(lambda: predict_workspace(workspace, test_dir, out))), soft_wrap=True, markup=False)


@app.command()
def report(
    path: Path = typer.Argument(..., help="A run workspace (workspaces/NAME), a campaign folder (workspaces/_campaigns/NAME) "
                                          "or a campaign bench's folder (ROOT/campaign-bench, from `agentk bench --campaign`)."),
) -> None:
    """Write the HTML report of a run, a campaign or a campaign bench (PATH/report.html) and print its path."""

    def body() -> Path:
        kind = _report_kind(path)
        if kind == "bench":
            from agentk.report.bench_report import write_bench_report

            return write_bench_report(path)
        if kind == "campaign":
            from agentk.report.campaign_report import write_campaign_report

            return write_campaign_report(path)
        from agentk.report.run_report import write_run_report

        return write_run_report(path)

    console.print(str(guard(body)), soft_wrap=True, markup=False)


def _report_kind(path: Path) -> str:
    """bench: the folder holds a bench's bench.json, or is named campaign-bench and holds campaign
    folders; campaign: its state.json lists tasks (a run's never does); else a run."""
    from agentk.core.records.campaign_record import BENCH_DIR, BENCH_JSON
    from agentk.core.records.workspace import read_json_object

    def is_campaign(folder: Path) -> bool:
        return "tasks" in read_json_object(folder / "state.json")

    if (path / BENCH_JSON).is_file():
        return "bench"
    if path.resolve().name == BENCH_DIR and path.is_dir() and any(is_campaign(p) for p in path.iterdir() if p.is_dir()):
        return "bench"
    return "campaign" if is_campaign(path) else "run"


def _print_result(result: RunResult) -> None:
    table = Table(title=f"agentk · {result.competition_id}", show_header=False)
    passed = sum(1 for s in result.setup.values() if s.passed)
    attempts = sum(s.attempts for s in result.setup.values())
    table.add_row("setup stages passed", f"{passed}/{len(result.setup)} ({attempts} attempts)" + ("; setup failed, so no model was trained" if result.setup_failure else ""))
    table.add_row("metric", str(result.metric))
    table.add_row("validation score", fmt(result.validation_score))
    note = result.test_score_note
    table.add_row("test score", fmt(result.test_score) + (f" ({note})" if note else ""))
    table.add_row("model", str(result.model))
    table.add_row("time", f"{result.elapsed_s:.1f} s")
    table.add_row("submission", str(result.submission_path))
    kaggle = result.kaggle
    if kaggle:
        table.add_row("kaggle submissions", str(len(kaggle["submissions"])) + (" (daily limit reached)" if kaggle["daily_limit_reached"] else ""))
        table.add_row("kaggle best public", f"{fmt(kaggle['best_public'])} ({kaggle['best_model'] or '—'})")
        if kaggle.get("code_competition"):
            kernel = next((s.get("kernel") for s in kaggle["submissions"] if s.get("kernel")), None)
            table.add_row("kaggle kernel", kernel["url"] if kernel else f"not submitted: {kaggle.get('stop_reason') or '—'}")
    console.print(table)


def main() -> None:  # pragma: no cover - console entry for `python -m agentk.cli`
    from agentk.core.process_exit import run_then_exit

    run_then_exit(app)


if __name__ == "__main__":  # pragma: no cover
    main()
