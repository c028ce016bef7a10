"""Run by the SkyPilot venv's python (``GPU_ADVISOR_SKYPILOT_PYTHON``, built by .ci/run from
skypilot-requirements.txt): each task YAML given through SkyPilot's own task schema and
``sky.Task.from_yaml_config``, a service also through SkyServe's own check (``sky serve up``
refuses a service task that opens no single port); prints one JSON line per file (num_nodes,
accelerators, replicas)."""

import json
import sys

import sky
import yaml
from sky.serve import serve_utils
from sky.utils import common_utils, schemas

for path in sys.argv[1:]:
    with open(path) as f:
        cfg = yaml.safe_load(f)
    common_utils.validate_schema(cfg, schemas.get_task_schema(), "Invalid task YAML: ")
    task = sky.Task.from_yaml_config(cfg)
    if task.service is not None:
        serve_utils.validate_service_task(task, pool=False)
    resources = task.resources if isinstance(task.resources, list) else list(task.resources)
    replicas = task.service.min_replicas if task.service is not None else None
    print(
        json.dumps(
            {
                "num_nodes": task.num_nodes,
                "accelerators": [r.accelerators for r in resources],
                "replicas": replicas,
            }
        )
    )
