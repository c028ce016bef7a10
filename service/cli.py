"""`gpu-advisor` command line: serve, migrate, keys, openapi, agent, and the questions
(estimate, recommend, compare, gpus) answered as tables or JSON."""

from __future__ import annotations

import gc
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    import datetime as dt

    from prometheus_client import CollectorRegistry

    from service.settings import Settings
    from service.usecases.prices import SkypilotImport

RUN_AS_COMMAND = Path(sys.argv[0]).name in ("gpu-advisor", "cli.py")
"""This process is the command (not a test or a program importing :data:`app`)."""
QUESTIONS = ("estimate", "recommend", "compare", "gpus")
if RUN_AS_COMMAND and sys.argv[1:2] and sys.argv[1] in QUESTIONS:
    # No cyclic garbage collection while a question's modules load (such a call is mostly
    # imports, and ~10 % of its CPU went to collections that found nothing); `_ask` turns it
    # back on before the question's work. Other commands (serve, agent ...) keep the default.
    gc.disable()

app = typer.Typer(
    help="GPU Advisor: pick GPUs for deep-learning jobs.", no_args_is_help=True, add_completion=False
)
keys_app = typer.Typer(help="Manage API keys.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
recommendations_app = typer.Typer(help="Stored /v1/recommend answers.", no_args_is_help=True)
app.add_typer(recommendations_app, name="recommendations")
prices_app = typer.Typer(help="Reference prices: import cloud catalogs.", no_args_is_help=True)
app.add_typer(prices_app, name="prices")


def _settings(**kw: object) -> Settings:
    """The settings, imported on first use: pydantic-settings costs every call ~0.3 s, and
    `--url` calls and `--help` need none."""
    from service.settings import Settings as _Settings

    return _Settings(**kw)  # type: ignore[arg-type]


def _engine(settings: Settings, *, limits: bool = False):  # type: ignore[no-untyped-def]
    from service.db.engine import EngineLimits, make_engine

    return make_engine(
        settings.database_url,
        sqlite_busy_timeout_ms=settings.sqlite_busy_timeout_ms,
        limits=EngineLimits.of(settings) if limits else None,
    )


def _log(msg: str) -> None:
    typer.echo(msg, err=True)


def _require_database(engine, *, migrated: bool = False) -> None:  # type: ignore[no-untyped-def]
    """One line and exit status 2, not a traceback, when the database cannot be opened (a
    PostgreSQL database that was never created, a server that is down, wrong credentials) or,
    with ``migrated``, has no schema yet."""
    from sqlalchemy import inspect
    from sqlalchemy.exc import DBAPIError

    where = engine.url.render_as_string(hide_password=True)
    try:
        with engine.connect() as conn:
            at_head = inspect(conn).has_table("alembic_version")
    except DBAPIError as exc:
        reason = (str(exc.orig) if exc.orig is not None else str(exc)).strip().splitlines()[0]
        hint = ""
        if engine.dialect.name == "postgresql" and "does not exist" in reason:
            host = engine.url.host or "localhost"
            user = f" -U {engine.url.username}" if engine.url.username else ""
            hint = f" (create it first: createdb -h {host}{user} {engine.url.database})"
        typer.echo(f"error: cannot open the database {where}: {reason}{hint}", err=True)
        raise typer.Exit(2) from None
    if migrated and not at_head:
        typer.echo(
            f"error: the database {where} has no schema yet: run `gpu-advisor migrate` first "
            "(or serve without --no-migrate)",
            err=True,
        )
        raise typer.Exit(2)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8000,
    workers: Annotated[int, typer.Option(help="uvicorn worker processes")] = 1,
    migrate: Annotated[bool, typer.Option(help="migrate and seed before serving")] = True,
    log_level: Annotated[
        str | None,
        typer.Option(help="debug | info | warning | error (default: GPU_ADVISOR_LOG_LEVEL, else info)"),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            help="serve /metrics only on this port (on GPU_ADVISOR_METRICS_HOST, default 127.0.0.1), "
            "not on the API port"
        ),
    ] = None,
) -> None:
    """Migrate, upsert the shipped catalog and committed measurements, then serve the API.

    Logs are JSON lines on stderr (GPU_ADVISOR_LOG_FORMAT=text for plain lines). With
    --workers > 1, Prometheus metrics run in multiprocess mode (PROMETHEUS_MULTIPROC_DIR, a
    fresh temporary directory unless set), so /metrics sums every worker; rate-limit buckets
    are shared by the workers only through Redis (GPU_ADVISOR_REDIS_URL)."""
    import logging.config
    import os

    import uvicorn

    from service.api.logs import logging_config
    from service.api.server import PROTOCOL
    from service.api.server import configure as configure_edge

    # Workers are fresh processes that read their settings from the environment: options go there.
    if log_level is not None:
        os.environ["GPU_ADVISOR_LOG_LEVEL"] = log_level
    if metrics_port is not None:
        os.environ["GPU_ADVISOR_METRICS_ACCESS"] = "port"
        os.environ["GPU_ADVISOR_METRICS_PORT"] = str(metrics_port)
    settings = _settings()
    log_config = logging_config(settings.log_format, settings.log_level)
    logging.config.dictConfig(log_config)
    log = logging.getLogger("gpu_advisor.serve")
    engine = _engine(settings)
    _require_database(engine, migrated=not migrate)
    if migrate:
        log.info("migrating %s", engine.url.render_as_string(hide_password=True))
        from service.bootstrap import bootstrap

        bootstrap(engine, settings, log=log.info)
    engine.dispose()
    # the API's own engine: every wait on the database bounded (migrations above are not)
    engine = _engine(settings, limits=True)
    options: dict[str, object] = {
        "host": host,
        "port": port,
        "log_config": log_config,
        "log_level": settings.log_level,
        "access_log": False,  # service.api.logs writes one JSON access line per request
        "proxy_headers": False,  # X-Forwarded-For is read by service.api.client_address (trusted_proxies)
        "server_header": False,
        # a worker must start (import the app) and answer the supervisor's pings within this;
        # uvicorn's 5 s kills and restarts workers that start slowly on a busy machine
        "timeout_worker_healthcheck": 60,
        # uvicorn's 5 s equals httpx's pool expiry: a client reusing a connection idle ~5 s
        # raced the server's close and lost the request (service.settings.keep_alive_timeout_s)
        "timeout_keep_alive": settings.keep_alive_timeout_s,
        # httptools with limits on the request head (size, field count, read time)
        "http": PROTOCOL,
    }
    configure_edge(settings)
    log.info("serving on http://%s:%s (docs at /docs), %d worker(s)", host, port, workers)
    if workers > 1:
        from service.api.metrics import scrape_registry

        _prometheus_multiprocess_dir(log)
        if settings.rate_limits_enabled and not settings.redis_url:
            log.warning(
                "rate limits without GPU_ADVISOR_REDIS_URL are kept per worker process: "
                "each of the %d workers grants the full budget",
                workers,
            )
        if settings.metrics_access == "port":
            _metrics_port(settings, scrape_registry(None, engine), log)
        uvicorn.run("service.api.asgi:app", workers=workers, **options)  # type: ignore[arg-type]
    else:
        from service.api.app import create_app
        from service.api.metrics import scrape_registry

        application = create_app(settings, engine=engine)
        if settings.metrics_access == "port":
            _metrics_port(settings, scrape_registry(application.state.metrics, engine), log)
        uvicorn.run(application, **options)  # type: ignore[arg-type]


def _prometheus_multiprocess_dir(log: logging.Logger) -> str:
    """PROMETHEUS_MULTIPROC_DIR for the workers: the given directory emptied of a previous
    run's files, or a fresh temporary one removed at exit."""
    import atexit
    import os
    import shutil
    import tempfile

    from service.api.metrics import MULTIPROC_ENV

    path = os.environ.get(MULTIPROC_ENV)
    if path:
        Path(path).mkdir(parents=True, exist_ok=True)
        for stale in Path(path).glob("*.db"):
            stale.unlink()
    else:
        path = tempfile.mkdtemp(prefix="gpu-advisor-prometheus-")
        os.environ[MULTIPROC_ENV] = path
        atexit.register(shutil.rmtree, path, True)
    log.info("prometheus multiprocess mode: %s", path)
    return path


def _metrics_port(settings: Settings, registry: CollectorRegistry, log: logging.Logger) -> None:
    from service.api.metrics import start_metrics_server

    start_metrics_server(settings.metrics_host, settings.metrics_port, registry)
    log.info("metrics on http://%s:%s/metrics only", settings.metrics_host, settings.metrics_port)


@app.command("migrate")
def migrate_cmd(
    seed: Annotated[bool, typer.Option(help="also upsert catalog and measurements")] = True,
) -> None:
    """Run database migrations (and seed) under an advisory lock, then exit."""
    from service.bootstrap import bootstrap
    from service.db.migrate import migrate_and_seed

    settings = _settings()
    engine = _engine(settings)
    _require_database(engine)
    if seed:
        bootstrap(engine, settings, log=_log)
    else:
        migrate_and_seed(engine)
    _log("database is at head")


@keys_app.command("create")
def keys_create(
    scope: Annotated[str, typer.Option(help="read | submit | admin")],
    name: Annotated[str, typer.Option(help="who or what uses the key")],
    trusted: Annotated[bool, typer.Option(help="trusted agent: its cells count as measured alone")] = False,
) -> None:
    """Create a key. The secret is printed once, on the last line."""
    from service.db.engine import make_session_factory
    from service.db.migrate import migrate_and_seed
    from service.db.uow import UnitOfWork
    from service.usecases.errors import UseCaseError
    from service.usecases.keys import create_key

    settings = _settings()
    engine = _engine(settings)
    _require_database(engine)
    migrate_and_seed(engine)
    try:
        with UnitOfWork(make_session_factory(engine)) as uow:
            k = create_key(uow, name=name, scope=scope, trusted=trusted)
    except UseCaseError as exc:
        typer.echo(f"error: {exc.detail}", err=True)
        raise typer.Exit(2) from None
    typer.echo(
        f"created key id={k.id} name={k.name!r} scope={k.scope} (revoke: gpu-advisor keys revoke {k.id}); "
        "store the secret now, it is not shown again:"
    )
    typer.echo(k.secret)


@keys_app.command("list")
def keys_list() -> None:
    """List keys (never secrets)."""
    from service.db.engine import make_session_factory
    from service.db.uow import UnitOfWork
    from service.usecases.keys import is_builtin, list_keys

    settings = _settings()
    engine = _engine(settings)
    _require_database(engine, migrated=True)
    with UnitOfWork(make_session_factory(engine)) as uow:
        for k in list_keys(uow):
            state = f"revoked {k.revoked_at:%Y-%m-%d}" if k.revoked_at else "active"
            if is_builtin(k):
                state = "built-in (committed measurements; cannot authenticate)"
            typer.echo(f"{k.id}\t{k.scope}\t{state}\tgpa_{k.prefix}_...\t{k.name}")


@keys_app.command("revoke")
def keys_revoke(
    key: Annotated[str, typer.Argument(help="the id `keys create` / `keys list` print, or the key's name")],
) -> None:
    """Revoke a key by id or name; requests with it get 401 from then on. The built-in agent's
    key (the committed measurements') is refused."""
    from service.db.engine import make_session_factory
    from service.db.uow import UnitOfWork
    from service.usecases.errors import UseCaseError
    from service.usecases.keys import revoke_key

    settings = _settings()
    engine = _engine(settings)
    _require_database(engine, migrated=True)
    try:
        with UnitOfWork(make_session_factory(engine)) as uow:
            revoked = revoke_key(uow, key)
    except UseCaseError as exc:
        typer.echo(f"error: {exc.detail}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"revoked key {revoked.id} ({revoked.name})")


@prices_app.command("import-skypilot")
def prices_import_skypilot(
    path: Annotated[
        Path,
        typer.Argument(help="a SkyPilot vms.csv (catalogs/v8/<cloud>/vms.csv)", exists=True, dir_okay=False),
    ],
    provider: Annotated[
        str | None, typer.Option(help="cloud name; default: the file's folder (aws/vms.csv -> aws)")
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="the prices' date, YYYY-MM-DD (the catalog commit's date); default today, stored as "
            "date_basis 'retrieved' (the prices are at least that old: answers give their age as a lower bound)",
        ),
    ] = None,
    source: Annotated[
        str | None, typer.Option(help="where the file came from; default names SkyPilot's catalog path")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="report only, write nothing")] = False,
) -> None:
    """Import cloud prices from a SkyPilot instance catalog: every malformed row is reported
    (line, column) and nothing is imported; unknown GPU names are reported, never guessed;
    re-importing the same file changes nothing."""
    import datetime as dt

    from service.catalog.skypilot_snapshot import load_hints
    from service.db.engine import make_session_factory
    from service.db.migrate import migrate_and_seed
    from service.db.uow import UnitOfWork
    from service.usecases.errors import UseCaseError
    from service.usecases.prices import import_skypilot

    name = provider or path.resolve().parent.name
    if not name or name in {".", "/"}:
        typer.echo("error: --provider is needed (the file's folder does not name a cloud)", err=True)
        raise typer.Exit(2)
    try:
        date = dt.date.fromisoformat(as_of) if as_of else dt.datetime.now(dt.UTC).date()
    except ValueError:
        typer.echo(f"error: --as-of: not a date (YYYY-MM-DD): {as_of!r}", err=True)
        raise typer.Exit(2) from None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        typer.echo(f"error: cannot read {path}: {exc}", err=True)
        raise typer.Exit(2) from None
    label = source or f"SkyPilot catalog catalogs/v8/{name}/vms.csv (operator import of {path.name})"
    settings = _settings()
    engine = _engine(settings)
    try:
        migrate_and_seed(engine)
        with UnitOfWork(make_session_factory(engine)) as uow:
            out = import_skypilot(
                uow,
                text,
                provider=name,
                effective_date=date,
                source=label,
                hints=load_hints(),
                dry_run=dry_run,
                date_basis="effective" if as_of else "retrieved",
            )
    except UseCaseError as exc:
        typer.echo(f"error: {exc.detail}", err=True)
        for f in exc.fields:
            typer.echo(f"  {', '.join(str(p) for p in f.path)}: {f.msg}", err=True)
        raise typer.Exit(2) from None
    finally:
        engine.dispose()
    _echo_import(out, name, date, dated=bool(as_of))


def _echo_import(out: SkypilotImport, name: str, date: dt.date, *, dated: bool) -> None:
    """What the import did, one line per skip reason and unmapped name, so an operator sees
    every price the file did not give (``dated``: the prices' date came from --as-of)."""
    r = out.report
    typer.echo(
        f"{name}: {r.gpu_rows} GPU rows, {r.non_gpu_rows} non-GPU rows, {r.duplicate_rows} duplicates; "
        f"{len(r.records)} price rows ({date.isoformat()}"
        + (")" if dated else ", the day read: no --as-of, so their age is a lower bound)")
    )
    for reason, n in r.skipped_by_reason().items():
        typer.echo(f"  skipped {n} row(s): {reason}")
    for i in r.issues:
        cands = f" (candidates: {', '.join(i.candidates)})" if i.candidates else ""
        typer.echo(f"  not mapped, {i.kind}: {i.name!r}{cands}, {i.offers} offer(s): {i.detail}")
    if out.dry_run:
        typer.echo("dry run: nothing written")
    else:
        typer.echo(f"{out.upserted} price row(s) added or changed")


@app.command()
def openapi(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="file to write; default stdout")
    ] = None,
) -> None:
    """Write the OpenAPI document of the running app (openapi/openapi.json in the repo)."""
    from service.api.app import create_app

    settings = _settings(database_url="sqlite://")
    doc = json.dumps(create_app(settings).openapi(), indent=2, sort_keys=True) + "\n"
    if output is None:
        sys.stdout.write(doc)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(doc)
        _log(f"wrote {output}")


def _fields(pairs: list[str] | None, body: dict[str, object]) -> dict[str, object]:
    """``key=value`` pairs into a request body; a dotted key nests (``constraints.max_gpus=8``),
    a value is JSON when it parses as JSON, else a string."""
    for item in pairs or []:
        key, _, raw = item.partition("=")
        try:
            value: object = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        *path, last = key.strip().split(".")
        node = body
        for part in path:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                typer.echo(f"error: --set {key}: {part} is not an object", err=True)
                raise typer.Exit(2)
            node = child
        node[last] = value
    return body


UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="GPU_ADVISOR_URL",
        help="ask a running server (e.g. http://127.0.0.1:8000) instead of the database in this process",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the API's JSON answer (for scripts)")]
LangOpt = Annotated[str, typer.Option("--lang", help="en | zh: the language of sentences")]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set", help="more request fields as key=value (JSON values; dots nest), e.g. --set seq_len=4096"
    ),
]


def _advisor(url: str | None, lang: str = "en"):  # type: ignore[no-untyped-def]
    """A running server's API (``--url``), else the use cases in this process on the
    configured database (migrated and seeded first only if it has no schema yet)."""
    from service.shell.advisor import LocalAdvisor, RemoteAdvisor

    if url:
        import os

        return RemoteAdvisor(url, api_key=os.environ.get("GPU_ADVISOR_API_KEY"), lang=lang)
    settings = _settings()
    engine = _engine(settings)
    at = _schema_revision(engine)
    if at != _head_revision():
        from service.bootstrap import bootstrap

        _log(
            "first use of this database: migrating and loading the shipped data"
            if at is None
            else f"the database's schema is at {at}: migrating to {_head_revision()} and loading the shipped data"
        )
        bootstrap(engine, settings)
    return LocalAdvisor(settings, engine, lang=lang)


def _schema_revision(engine) -> str | None:  # type: ignore[no-untyped-def]
    """The database's migration revision; None when it has no schema yet."""
    from sqlalchemy import inspect, text
    from sqlalchemy.exc import DBAPIError

    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return None
            return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()  # type: ignore[no-any-return]
    except DBAPIError:
        _require_database(engine)  # one line and exit 2 for a database that cannot be opened
        raise


def _head_revision() -> str | None:
    """The newest migration shipped, read from the migration files' ``revision`` and
    ``down_revision`` lines (importing Alembic to ask would cost every call ~0.2 s)."""
    import re

    import service

    revs: dict[str, str | None] = {}
    # where service.db.migrate points Alembic: <repo>/migrations
    for path in (Path(service.__file__).resolve().parents[1] / "migrations" / "versions").glob("*.py"):
        text = path.read_text()
        rev = re.search(r"^revision[^=]*=\s*['\"]([^'\"]+)", text, re.M)
        down = re.search(r"^down_revision[^=]*=\s*['\"]([^'\"]+)", text, re.M)
        if rev:
            revs[rev.group(1)] = down.group(1) if down else None
    heads = set(revs) - {d for d in revs.values() if d}
    return heads.pop() if len(heads) == 1 else None


def _ask(adv, call, as_json: bool, show) -> None:  # type: ignore[no-untyped-def]
    """Run one question; print the answer (a table, or JSON) or the refusal (exit 2)."""
    from service.shell.advisor import AdvisorError

    if not gc.isenabled():  # turned off for the imports (RUN_AS_COMMAND)
        gc.freeze()  # what is loaded so far lives as long as the process: never scanned again
        gc.enable()
    try:
        doc = call()
        note = getattr(adv, "fit_note", lambda: None)()
        if note:
            _log(note)
    except AdvisorError as exc:
        typer.echo(f"error: {exc.detail}", err=True)
        for f in exc.fields:
            typer.echo(f"  {f}", err=True)
        if exc.candidates:
            typer.echo("  it may mean (name one of these):", err=True)
            for c in exc.candidates:
                default = " (the default)" if c.get("default") else ""
                typer.echo(f"    {c.get('slug')}: {c.get('name')}{default}", err=True)
        raise typer.Exit(2) from None
    except httpx_errors() as exc:
        typer.echo(f"error: cannot reach the server: {exc}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        show(doc)


def httpx_errors() -> tuple[type[Exception], ...]:
    import httpx

    return (httpx.TransportError,)


@app.command()
def estimate(
    model: Annotated[str, typer.Option(help="preset id, alias or Hugging Face id")],
    gpu: Annotated[str, typer.Option(help="slug, alias or PCI id")],
    gpu_count: Annotated[int, typer.Option(help="GPUs")] = 1,
    mode: Annotated[str, typer.Option(help="training | fine-tuning | inference")] = "training",
    set_: SetOpt = None,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
) -> None:
    """Estimate memory and time for one configuration: the answer of POST /v1/estimate, as a
    table (or --json)."""
    from service.shell import render

    body = _fields(set_, {"model": model, "gpu": gpu, "gpu_count": gpu_count, "mode": mode})
    adv = _advisor(url)
    _ask(adv, lambda: adv.estimate(body), as_json, render.estimate)


@app.command()
def recommend(
    model: Annotated[str, typer.Option(help="preset id, alias or Hugging Face id")],
    mode: Annotated[str, typer.Option(help="training | fine-tuning | inference")] = "training",
    objective: Annotated[
        str, typer.Option(help="fastest | cheapest | cost_per_million_tokens | perf_per_watt")
    ] = "fastest",
    gpus: Annotated[
        str | None,
        typer.Option(help="only these GPUs, comma-separated (a family name matches every variant)"),
    ] = None,
    max_gpus: Annotated[int | None, typer.Option(help="most GPUs per option")] = None,
    limit: Annotated[int, typer.Option(help="ranked options to show")] = 5,
    set_: SetOpt = None,
    as_json: JsonOpt = False,
    lang: LangOpt = "en",
    url: UrlOpt = None,
    emit: Annotated[
        str | None,
        typer.Option(help="print a deployment artifact instead: kubernetes | skypilot | slurm"),
    ] = None,
    rank: Annotated[int, typer.Option(help="with --emit: the ranked option to deploy", min=1)] = 1,
) -> None:
    """Which GPU, how many and how: the ranked answer of POST /v1/recommend. Workload fields go
    in --set (tokens=1e9, batch_size=4, requests_per_s=20 ...), constraints as
    --set constraints.budget.per_hour=40. --emit prints the answer's deployment artifact for a
    scheduler (what GET /v1/recommendations/{id}/artifacts gives); its FILL-IN list goes to
    stderr."""
    from service.shell import render

    body: dict[str, object] = {
        "workload": {"model": model, "mode": mode},
        "objective": objective,
        "limit": limit,
    }
    constraints: dict[str, object] = {}
    if gpus:
        constraints["allowed_gpus"] = [g.strip() for g in gpus.split(",") if g.strip()]
    if max_gpus is not None:
        constraints["max_gpus"] = max_gpus
    if constraints:
        body["constraints"] = constraints
    workload_keys = [
        p for p in set_ or [] if not p.split("=", 1)[0].strip().startswith(("constraints.", "cost."))
    ]
    other_keys = [p for p in set_ or [] if p not in workload_keys]
    _fields(workload_keys, body["workload"])  # type: ignore[arg-type]
    _fields(other_keys, body)
    adv = _advisor(url, lang)
    if emit is None:
        _ask(adv, lambda: adv.recommend(body), as_json, render.recommend)
        return
    _ask(adv, lambda: adv.artifact(adv.recommend(body), target=emit, rank=rank), as_json, _print_artifact)


def _print_artifact(doc: dict[str, object]) -> None:
    """The artifact's text on stdout (pipe it to a file or kubectl), its placeholders on stderr."""
    typer.echo(str(doc["content"]), nl=False)
    for f in doc.get("fill_in") or []:  # type: ignore[attr-defined]
        typer.echo(f"FILL-IN {f}", err=True)


@app.command()
def compare(
    gpus: Annotated[
        list[str], typer.Argument(help="2 to 8 GPU names (slug, alias or PCI id); the first is the reference")
    ],
    currency: Annotated[str, typer.Option(help="USD | CNY")] = "USD",
    workload: Annotated[str | None, typer.Option(help="only result rows of this workload")] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
) -> None:
    """Specs, capabilities, measured results and prices side by side (GET /v1/compare)."""
    from service.shell import render

    names = [n.strip() for g in gpus for n in g.split(",") if n.strip()]
    adv = _advisor(url)
    _ask(adv, lambda: adv.compare(names, currency=currency, workload=workload), as_json, render.compare)


@app.command("gpus")
def gpus_cmd(
    vendor: Annotated[str | None, typer.Option(help="nvidia | amd | intel")] = None,
    min_memory_gib: Annotated[float | None, typer.Option(help="at least this usable memory (GiB)")] = None,
    supports: Annotated[
        list[str] | None,
        typer.Option(help="a precision each listed GPU supports (repeatable): fp8, bf16 ..."),
    ] = None,
    form_factor: Annotated[str | None, typer.Option(help="pcie | sxm | oam")] = None,
    sort: Annotated[
        str,
        typer.Option(
            help="slug, usable_memory_bytes, bandwidth_gb_per_s, tdp_w, bf16_tflops, fp8_tflops ...; '-' prefix descends"
        ),
    ] = "slug",
    as_json: JsonOpt = False,
    url: UrlOpt = None,
) -> None:
    """The GPU catalog, filtered and sorted (GET /v1/gpus)."""
    from service.shell import render

    query = {
        "vendor": vendor,
        "min_usable_memory_gib": min_memory_gib,
        "supports": supports,
        "form_factor": form_factor,
        "sort": sort,
    }
    adv = _advisor(url)
    _ask(adv, lambda: adv.gpus(query), as_json, render.gpus)


@recommendations_app.command("prune")
def recommendations_prune(
    days: Annotated[
        int | None,
        typer.Option(
            help="keep this many days (default: the setting GPU_ADVISOR_RECOMMENDATION_RETENTION_DAYS)", min=1
        ),
    ] = None,
) -> None:
    """Delete stored recommendations older than the retention (run it from cron)."""
    import datetime as dt

    from service.db.engine import make_session_factory
    from service.db.uow import UnitOfWork
    from service.usecases.recommend import prune_recommendations

    settings = _settings()
    keep = days or settings.recommendation_retention_days
    with UnitOfWork(make_session_factory(_engine(settings))) as uow:
        n = prune_recommendations(uow, retention_days=keep, now=dt.datetime.now(dt.UTC))
    typer.echo(f"deleted {n} stored recommendations older than {keep} days")


AGENT_HELP = "Benchmark agent for GPU nodes (probe, run, submit, flush)."


def _mount_optional() -> None:
    """The agent's commands, mounted only when asked for: importing them costs a CLI call
    ~0.5 s (the typed client's models). ``gpu-advisor --help`` lists an empty group of the
    same name and help instead."""
    asked = sys.argv[1:2]
    if RUN_AS_COMMAND and asked and asked[0] != "agent":
        if asked[0] in ("--help", "-h"):
            app.add_typer(typer.Typer(), name="agent", help=AGENT_HELP)
        return
    try:
        from service.agent.cli import agent_app
    except ImportError:  # agent not built yet
        return
    app.add_typer(agent_app, name="agent", help=AGENT_HELP)


_mount_optional()

if __name__ == "__main__":
    app()
