"""`rsr images ...`: build every task image once and push it where a cluster can pull it."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

app = typer.Typer(help="Build task images and push them to a registry (for the k8s sandbox).",
                  no_args_is_help=True)


@app.command()
def build(
    target: str = typer.Argument(..., help="A suite name (core, tb2, ...) or a path to tasks."),
    push: str | None = typer.Option(None, "--push", metavar="REGISTRY",
                                    help="Push to this registry (e.g. registry.example.org/rsr) and "
                                         "record the digests in the image map."),
    tasks: str | None = typer.Option(None, "--tasks", "-t", help="Only tasks matching these globs."),
    exclude: str | None = typer.Option(None, "--exclude", "-x", help="Skip tasks matching these globs."),
    image_map: Path | None = typer.Option(None, "--map", help="Image map file (default: "
                                          "$RSR_CACHE_DIR/images/<registry-slug>.json)."),
    external: bool = typer.Option(False, "--external", help="Record prebuilt images that are not on "
                                  "this machine as they are (the cluster pulls them from their own "
                                  "registry) instead of failing."),
    force: bool = typer.Option(False, "--force", help="Push again even if the map has the image."),
    force_build: bool = typer.Option(False, "--force-build", help="Build every task from its "
                                     "environment/Dockerfile, even one that names a prebuilt docker_image "
                                     "(as -T images=force-build; run k8s with -T images=force-build too)."),
) -> None:
    """Get each task's images as the docker sandbox does (a prebuilt docker_image is pulled when
    absent, else the Dockerfile is built: host network, stable content tags); with --push, push
    them and record `REGISTRY/...@sha256:...` for `-T sandbox=k8s`."""
    from rsr.errors import DatasetLoadError, RsrError
    from rsr.sandbox.compose import MAIN_SERVICE, image_tag
    from rsr.sandbox.images import (
        ImageMap,
        ImageRecord,
        image_map_path,
        image_user,
        load_image_map,
        local_image_exists,
        push_image,
        task_images,
    )
    from rsr.sandbox.k8s_values import write_values_file
    from rsr.suites.check import build_image, resolve_target
    from rsr.tasks.load import load_dataset

    console = Console(soft_wrap=True, highlight=False)
    loaded = load_dataset(resolve_target(target).resolve(), tasks, exclude)
    if loaded.errors:
        raise DatasetLoadError(loaded.errors)
    if not loaded.tasks:
        raise RsrError(f"{target}: no tasks found")
    images: ImageMap | None = None
    if push:
        path = image_map if image_map is not None else image_map_path(push)
        images = load_image_map(path) if path.is_file() else ImageMap(registry=push, source_path=path)
        if images.registry != push:
            raise RsrError(f"{path}: records registry {images.registry!r}, not {push!r}; "
                           "choose another --map")
    failed: list[str] = []
    unrunnable: list[str] = []
    for n, task in enumerate(loaded.tasks, 1):
        prefix = f"[{n}/{len(loaded.tasks)}] {task.name}"
        wanted = task_images(task, force_build)
        if images is not None and not force and all(images.lookup(i.local) for i in wanted):
            console.print(f"{prefix}: already pushed")
            continue
        # A prebuilt image is pulled (auto: built from the Dockerfile if the pull fails), unless
        # --external leaves the pulling to the cluster.
        absent = [i for i in wanted if not i.built and not local_image_exists(i.local)]
        if any(i.built for i in wanted) or (absent and not external):
            seconds, _mb, error = build_image(task, "force-build" if force_build else "auto")
            if error:
                console.print(f"{prefix}: [red]{'pull' if 'pulling image' in error else 'build'} failed[/red] "
                              f"after {seconds:.0f}s\n{error}")
                failed.append(task.name)
                continue
        for image in wanted:
            label = f"{prefix} {image.service}: {image.local}"
            source = image.local
            if not image.built and not local_image_exists(image.local) and image.service == MAIN_SERVICE \
                    and not external and local_image_exists(image_tag(task)):
                source = image_tag(task)  # the pull failed and the Dockerfile was built instead
            if images is None:
                state = ("built" if image.built else f"built as {source} (the pull failed)" if source != image.local
                         else "pulled" if local_image_exists(source) else "prebuilt, not pulled (--external)")
                console.print(f"{label} {state}")
                continue
            if not image.built and not local_image_exists(source):
                if not external:
                    console.print(f"{label}: [red]prebuilt image is not on this machine[/red]; "
                                  "`docker pull` it first, or pass --external to let the cluster "
                                  "pull it from its own registry")
                    failed.append(task.name)
                    continue
                record = ImageRecord(task=task.name, service=image.service, local=image.local,
                                     reference=image.local, built=False)
            else:
                try:
                    reference = push_image(push or "", source)
                except RsrError as e:
                    console.print(f"{label}: [red]{e}[/red]")
                    failed.append(task.name)
                    continue
                record = ImageRecord(task=task.name, service=image.service, local=image.local,
                                     reference=reference, user=image_user(source),
                                     built=image.built or source != image.local)
            images.add(record)
            images.save()  # after every image: an interrupted push keeps what it finished
            console.print(f"{label} -> {record.reference}")
        if images is not None and all(images.lookup(i.local) for i in wanted):
            try:  # the values a k8s run will use, checked against the chart now, not per sample
                write_values_file(task, images, force_build)
            except RsrError as e:
                console.print(f"{prefix}: [yellow]pushed, but cannot run on k8s[/yellow]: {e}")
                unrunnable.append(task.name)
    if images is not None and images.source_path is not None and images.images:
        run_with = (f"`RSR_K8S_IMAGES={images.source_path}` and `-T sandbox=k8s -T images=force-build`"
                    if force_build else f"`-T sandbox=k8s -T images={images.source_path}`")
        console.print(f"image map: {images.source_path} ({len(images.images)} images); run with {run_with}")
    elif images is None:
        console.print("built only (no --push): nothing was recorded for the k8s sandbox")
    if unrunnable:
        console.print(f"[yellow]{len(unrunnable)} task(s) need the docker sandbox:[/yellow] "
                      f"{', '.join(unrunnable)}")
    if failed:
        console.print(f"[red]{len(set(failed))} task(s) failed:[/red] {', '.join(sorted(set(failed)))}")
        raise typer.Exit(1)


@app.command("show")
def show(registry_or_map: str = typer.Argument(None, help="A registry or an image map file "
                                                           "(default: as -T sandbox=k8s finds it).")
         ) -> None:
    """Print an image map (local image -> pushed reference)."""
    from rsr.sandbox.images import find_image_map

    images = find_image_map(registry_or_map)
    console = Console(soft_wrap=True, highlight=False)
    console.print(f"{images.source_path}: registry {images.registry}, {len(images.images)} images")
    for record in sorted(images.images.values(), key=lambda r: (r.task, r.service)):
        console.print(f"  {record.task} {record.service}: {record.reference}")
