"""Wire model of a deployment artifact (``GET /v1/recommendations/{id}/artifacts``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from service.schemas.common import DataVersion

Target = Literal["kubernetes", "skypilot", "slurm"]


class ArtifactOut(BaseModel):
    recommendation_id: str
    data_version: DataVersion
    target: Target
    option: int = Field(description="the rank of the option rendered")
    media_type: str = Field(description="what `content` is: application/yaml or text/x-shellscript")
    filename: str = Field(description="a file name for `content`")
    content: str = Field(
        description="the artifact itself: Kubernetes manifests (multi-document YAML), a SkyPilot task "
        "YAML or an sbatch script; every placeholder is marked FILL-IN"
    )
    fill_in: list[str] = Field(description="what the user must provide (image, model path, secrets...)")
