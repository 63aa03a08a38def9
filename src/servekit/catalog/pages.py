"""Typed contexts of the catalog pages, built from package definitions and their cards.

A :class:`Catalog` holds every package version with its definition and card; the
live web app and the static export both render from it, through the same templates. Where
the pages link to (a server route or a file next to the page) is the :class:`Links` the
caller passes, so the templates never spell a URL themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from servekit.catalog.cards import Card, CardFigure, build_card, figure_workload
from servekit.catalog.chart import Panel, charts, panel_of
from servekit.catalog.listing import (
    CardKeys,
    Facets,
    Listing,
    Query,
    card_keys,
    facets,
    list_cards,
)
from servekit.errors import NotFoundError, PackageError, UsageError
from servekit.kit.archive import kit_filename
from servekit.package.files import PACKAGE_GLOB
from servekit.package.load import LoadedPackage, load_package
from servekit.package.models import MeasurementStatus, Metric, Package, Workload
from servekit.package.rules import check


class Links(Protocol):
    """Where the pages link to: a live server's routes or the static export's files."""

    def index(self, query: Query) -> str: ...
    def package(self, card: Card) -> str: ...
    def file(self, card: Card, path: str) -> str: ...
    def chart(self, card: Card, panel: Panel) -> str: ...
    def asset(self, name: str) -> str: ...


@dataclass(frozen=True)
class Entry:
    """One package version: its definition and its card (which carries what the rules said)."""

    loaded: LoadedPackage
    card: Card

    @property
    def package(self) -> Package:
        return self.loaded.package

    def public_files(self) -> frozenset[str]:
        """Package files a page may link to: evidence, licences and the build recipe."""
        pkg = self.package
        files = {r.file for r in pkg.measurements.runs}
        files |= {c.evidence for c in pkg.accuracy.controls if c.evidence}
        files |= {pkg.license.file, pkg.model.license.file}
        if pkg.engine.build_recipe:
            files.add(pkg.engine.build_recipe)
        return frozenset(files)


def load_entry(directory: Path) -> Entry:
    loaded = load_package(directory)
    return Entry(loaded=loaded, card=build_card(loaded, check(loaded)))


@dataclass
class Catalog:
    """Every package version on show, sorted by id then version.

    ``retracted`` maps (id, version) to the store's reason: those versions keep their
    package page (which says so) but leave the listing, since they are no longer for sale.
    """

    entries: list[Entry]
    retracted: dict[tuple[str, str], str] = field(default_factory=dict)
    _by_key: dict[tuple[str, str], Entry] = field(init=False)
    _by_id: dict[str, list[Entry]] = field(init=False)
    _keys: dict[tuple[str, str], CardKeys] = field(init=False)
    facets: Facets = field(init=False)

    def __post_init__(self) -> None:
        _refuse_duplicates(self.entries)
        self.entries.sort(key=lambda e: (e.card.id, _version_key(e.card.version)))
        self._by_key = {(e.card.id, e.card.version): e for e in self.entries}
        self._by_id = {}
        for e in self.entries:  # in version order: a package page lists its history
            self._by_id.setdefault(e.card.id, []).append(e)
        self.facets = facets(self.on_sale)
        self._keys = {(e.card.id, e.card.version): card_keys(e.card) for e in self.entries}

    def keys_of(self, card: Card) -> CardKeys:
        """The card's search and sort keys, worked out when the catalog was made."""
        return self._keys[(card.id, card.version)]

    @property
    def cards(self) -> list[Card]:
        return [e.card for e in self.entries]

    @property
    def on_sale(self) -> list[Card]:
        return [c for c in self.cards if (c.id, c.version) not in self.retracted]

    def get(self, package_id: str, version: str) -> Entry | None:
        return self._by_key.get((package_id, version))

    def versions(self, package_id: str) -> list[Entry]:
        """Every version of one package, oldest first (a lookup: pages ask per package)."""
        return list(self._by_id.get(package_id, ()))


def _refuse_duplicates(entries: list[Entry]) -> None:
    """One catalog holds each id and version once: two would share a page and a kit name."""
    seen: dict[tuple[str, str], Entry] = {}
    for entry in entries:
        first = seen.setdefault((entry.card.id, entry.card.version), entry)
        if first is not entry:
            raise PackageError(
                f"{first.loaded.root} and {entry.loaded.root} are both "
                f"{entry.card.id} {entry.card.version}",
                hint="give one of them a new version (or id); a catalog lists each version once",
            )


def _version_key(version: str) -> tuple[int, ...]:
    head = version.split("-")[0].split(".")[:3]
    return tuple(int(p) for p in head if p.isdigit())


def package_dirs(packages: Path) -> list[Path]:
    """Every package directory directly under ``packages`` (those with a package.yaml)."""
    return sorted(p.parent for p in packages.glob(PACKAGE_GLOB))


def load_catalog(packages_dir: Path) -> Catalog:
    """Load, check and card every package directory under ``packages_dir``."""
    dirs = package_dirs(packages_dir)
    if not dirs:
        raise UsageError(
            f"no package.yaml under {packages_dir}/*/",
            hint="pass the directory that holds one folder per package",
        )
    return Catalog([load_entry(d) for d in dirs])


# --- the package page -------------------------------------------------------------------


class FigureRow(BaseModel):
    """A figure on the package page, with the workload it was measured on."""

    model_config = ConfigDict(frozen=True)

    figure_id: str
    workload: Workload | None
    computed: str


class VersionRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    card: Card
    current: bool
    changes: tuple[str, ...]


class PackagePage(BaseModel):
    """Everything the package page shows, read from one package definition."""

    model_config = ConfigDict(frozen=True)

    card: Card
    package: Package
    rows: dict[str, FigureRow]
    kit_contains: tuple[str, ...]
    kit_excludes: tuple[str, ...]
    history: tuple[VersionRow, ...]
    kit_file: str
    """The name the store's download gives the kit, as the page's commands spell it."""
    charts: tuple[Panel, ...]
    """The chart panels drawn (none when every series is a single point)."""
    retracted: str | None = None  # the store's reason, when this version is off sale
    signing_key_id: str | None = None  # the live store's key, which signs the kit it sells


def _computed(entry: Entry, figure_id: str) -> str:
    fig = entry.package.figure(figure_id)
    if fig is None:
        return ""
    if fig.source is not None and not fig.runs:
        return f"as published by {fig.source.name}; servekit has no raw records to recompute it"
    runs = ", ".join(fig.runs)
    stat = fig.statistic.value
    return (
        f"{stat} of {fig.metric.value} over the measured requests at concurrency "
        f"{fig.concurrency} in run {runs}, recomputed from the raw records and rounded to "
        f"{fig.decimals} decimals; replicate runs must agree within "
        f"{entry.package.measurements.tolerance_pct:g} %"
    )


def _rows(entry: Entry) -> dict[str, FigureRow]:
    pkg = entry.package
    rows = {}
    for fig in pkg.published_figures:
        workload_id = figure_workload(pkg, fig)
        workload = pkg.workload(workload_id) if workload_id else None
        rows[fig.id] = FigureRow(
            figure_id=fig.id, workload=workload, computed=_computed(entry, fig.id)
        )
    return rows


def _kit(pkg: Package, card: Card) -> tuple[tuple[str, ...], tuple[str, ...]]:
    contains = [
        "the serve command and environment, flag for flag, in Docker Compose, Kubernetes "
        "and a plain launch script",
        "the package definition and every raw evidence file it names",
        "the package licence, the base model licence and its notice",
        "a receipt signed with Ed25519 over the kit's manifest",
    ]
    if pkg.engine.build_recipe:
        contains.append(f"the engine build recipe ({pkg.engine.build_recipe})")
    excludes = [f"the model weights: {card.weights}"]
    if not pkg.engine.binary_ships:
        excludes.append(f"the engine binary: build it from the recipe ({pkg.engine.name})")
    return tuple(contains), tuple(excludes)


def _changes(pkg: Package) -> tuple[str, ...]:
    return tuple(
        f"{f.label} at concurrency {f.concurrency}: {f.status.state.value} on "
        f"{f.status.date}: {f.status.reason}"
        for f in pkg.measurements.figures
        if f.status.state is not MeasurementStatus.CURRENT
    )


def package_page(catalog: Catalog, entry: Entry) -> PackagePage:
    contains, excludes = _kit(entry.package, entry.card)
    history = tuple(
        VersionRow(card=e.card, current=e is entry, changes=_changes(e.package))
        for e in reversed(catalog.versions(entry.card.id))
    )
    return PackagePage(
        card=entry.card,
        package=entry.package,
        rows=_rows(entry),
        kit_contains=contains,
        kit_excludes=excludes,
        history=history,
        kit_file=kit_filename(entry.card.id, entry.card.version),
        charts=tuple(c.panel for c in charts(entry.card.figures, entry.card.concurrencies)),
        retracted=catalog.retracted.get((entry.card.id, entry.card.version)),
    )


def listing_of(catalog: Catalog, query: Query, page_size: int) -> Listing:
    return list_cards(
        catalog.on_sale,
        query,
        all_facets=catalog.facets,
        page_size=page_size,
        keys=catalog.keys_of,
    )


# --- the compare page -------------------------------------------------------------------

COMPARE_MIN, COMPARE_MAX = 2, 3


class CompareRow(BaseModel):
    """One line of the comparison: a name and one cell per version ("" for none)."""

    model_config = ConfigDict(frozen=True)

    name: str
    cells: tuple[str, ...]
    figures: tuple[CardFigure | None, ...] = ()
    """For a figure row: each version's figure, None where it published none."""


class ComparePage(BaseModel):
    """Two or three package versions side by side: their facts, then every figure any of
    them published, matched by metric, statistic, scope and concurrency."""

    model_config = ConfigDict(frozen=True)

    cards: tuple[Card, ...]
    facts: tuple[CompareRow, ...]
    figures: tuple[CompareRow, ...]


def _facts(cards: tuple[Card, ...]) -> tuple[CompareRow, ...]:
    fields = (
        ("Price", lambda c: f"{c.price} ({c.tier})"),
        ("Maintenance", lambda c: c.maintenance),
        ("Status", lambda c: c.status + (": not for sale" if c.draft else "")),
        ("Model", lambda c: c.model_repo),
        ("Hardware", lambda c: c.hardware),
        ("Engine", lambda c: c.engine),
        ("Accuracy", lambda c: f"{c.accuracy_claim} (gate {c.accuracy_gate})"),
        ("Licence", lambda c: f"{c.package_license}; model: {c.model_license}"),
        ("Published", lambda c: str(c.published or "not yet")),
        ("Claim rules", lambda c: "pass" if c.checks_pass else f"{len(c.violations)} refused"),
    )
    return tuple(CompareRow(name=n, cells=tuple(get(c) for c in cards)) for n, get in fields)


_FigureKey = tuple[int, str, str, bool, int]


def _figure_key(fig: CardFigure) -> _FigureKey:
    return (
        list(Panel).index(panel_of(Metric(fig.metric))),
        fig.metric,
        fig.statistic,
        fig.per_gpu,
        fig.concurrency,
    )


def _figure_rows(cards: tuple[Card, ...]) -> tuple[CompareRow, ...]:
    table: dict[_FigureKey, list[CardFigure | None]] = {}
    for column, card in enumerate(cards):
        for fig in card.figures:
            cells = table.setdefault(_figure_key(fig), [None] * len(cards))
            cells[column] = cells[column] or fig
    rows = []
    for key, cells in sorted(table.items()):
        label = next(f.label for f in cells if f is not None)
        texts = tuple(f.display if f else "not published" for f in cells)
        rows.append(
            CompareRow(name=f"{label}, concurrency {key[-1]}", cells=texts, figures=tuple(cells))
        )
    return tuple(rows)


def compare_page(catalog: Catalog, wanted: list[str]) -> ComparePage:
    """The versions named ``ID@VERSION`` (duplicates dropped), two or three of them."""
    keys = list(dict.fromkeys(w.strip() for w in wanted if w.strip()))
    if not COMPARE_MIN <= len(keys) <= COMPARE_MAX:
        raise UsageError(
            f"compare takes {COMPARE_MIN} or {COMPARE_MAX} package versions, got {len(keys)}",
            hint="tick two or three versions on the catalog page, then Compare selected",
        )
    entries = []
    for key in keys:
        package_id, _, version = key.partition("@")
        entry = catalog.get(package_id, version)
        if entry is None:
            raise NotFoundError(
                f"no published package {package_id} {version} (from {key!r})",
                hint="compare takes ID@VERSION of versions the catalog page lists",
            )
        entries.append(entry)
    cards = tuple(e.card for e in entries)
    return ComparePage(cards=cards, facts=_facts(cards), figures=_figure_rows(cards))
