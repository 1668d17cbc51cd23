"""The arguments of each kubernetes tool, as pydantic models (each tool's ``input_schema``).

Every model refuses fields it does not declare. Namespaces are checked as DNS-1123 labels
and object names as DNS-1123 subdomains before any request is made, as the API server
checks them (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/),
so no value can add a path segment, a query or a fragment to a request: both allow only
lower-case letters, digits, ``-`` and (names) ``.`` between alphanumeric characters.
ConfigMap keys and labels are checked the way the API server validates them
(https://kubernetes.io/docs/concepts/configuration/configmap/,
https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = [
    "DNS1123_LABEL",
    "DNS1123_SUBDOMAIN",
    "MAX_CONFIGMAP_BYTES",
    "CreateConfigMapArgs",
    "DeleteConfigMapArgs",
    "DeletePodArgs",
    "DeploymentArgs",
    "ListPodsArgs",
    "RestoreReplicasArgs",
    "ScaleDeploymentArgs",
]

DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""A DNS-1123 label (RFC 1123): what a namespace's name must be, at most 63 characters."""

DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A DNS-1123 subdomain: what a deployment's, pod's or config map's name must be (253 at most)."""

MAX_CONFIGMAP_BYTES = 1024 * 1024
"""The API server refuses a ConfigMap whose data is larger than 1 MiB."""

MAX_REPLICAS = 2**31 - 1
"""``spec.replicas`` is an int32."""

_CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _check_data(data: dict[str, str]) -> dict[str, str]:
    """Refuse ConfigMap keys the API server refuses, and data over 1 MiB."""
    for key in data:
        if len(key) > 253 or not _CONFIGMAP_KEY.match(key) or key in (".", ".."):
            raise ValueError(
                f"{key!r} is not a valid ConfigMap key: use at most 253 letters, digits, '-', "
                "'_' or '.', and neither '.' nor '..'"
            )
    size = sum(len(k.encode()) + len(v.encode()) for k, v in data.items())
    if size > MAX_CONFIGMAP_BYTES:
        raise ValueError(f"the data is {size} bytes; a ConfigMap holds at most 1 MiB")
    return data


def _check_labels(labels: dict[str, str]) -> dict[str, str]:
    """Refuse label keys and values the API server refuses (an optional DNS prefix, then a name)."""
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if prefix and (len(prefix) > 253 or not re.match(DNS1123_SUBDOMAIN, prefix)):
            raise ValueError(f"label {key!r}: its prefix must be a DNS-1123 subdomain")
        if not name or len(name) > 63 or not _LABEL_NAME.match(name):
            raise ValueError(
                f"label {key!r}: its name must be 1-63 letters, digits, '-', '_' or '.', "
                "beginning and ending with a letter or digit"
            )
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            raise ValueError(
                f"label {key!r}: its value must be empty or 1-63 letters, digits, '-', '_' or "
                "'.', beginning and ending with a letter or digit"
            )
    return labels


Namespace = Annotated[
    str,
    Field(
        min_length=1,
        max_length=63,
        pattern=DNS1123_LABEL,
        description="The namespace, such as 'default' (a DNS-1123 label: lower-case letters, "
        "digits and '-', at most 63 characters).",
    ),
]
Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        pattern=DNS1123_SUBDOMAIN,
        description="The object's name (a DNS-1123 subdomain: lower-case letters, digits, '-' and "
        "'.', at most 253 characters).",
    ),
]
Uid = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9-]+$",
        description="The object's metadata.uid, as a tool of this connector returned it.",
    ),
]
ContentHash = Annotated[
    str,
    Field(
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="The hash of a config map's data and labels, as create_configmap returned it.",
    ),
]
Replicas = Annotated[int, Field(ge=0, le=MAX_REPLICAS, description="A number of replicas.")]
Selector = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1024,
        description="A selector in the API server's syntax, such as 'app=web,tier!=cache'.",
    ),
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Named(_Args):
    namespace: Namespace
    name: Name


class DeploymentArgs(_Named):
    """Arguments of kubernetes.get_deployment and kubernetes.rollout_restart."""


class ScaleDeploymentArgs(_Named):
    """Arguments of kubernetes.scale_deployment."""

    replicas: Replicas = Field(description="The number of replicas to scale the deployment to.")


class RestoreReplicasArgs(_Named):
    """Arguments of kubernetes.restore_replicas (what kubernetes.scale_deployment returned)."""

    replicas: Replicas = Field(
        description="The count to put back (scale_deployment's previous_replicas)."
    )
    expected_replicas: Replicas = Field(
        description="The count scale_deployment set (its replicas). If the deployment has "
        "another count now, someone scaled it since, and nothing is changed."
    )
    uid: Uid = Field(
        description="The deployment's uid when it was scaled; a deployment of the same name "
        "created since is left alone."
    )


class ListPodsArgs(_Args):
    """Arguments of kubernetes.list_pods."""

    namespace: Namespace
    label_selector: Selector | None = Field(
        default=None, description="Only pods whose labels match, such as 'app=web'."
    )
    field_selector: Selector | None = Field(
        default=None,
        description="Only pods whose fields match, such as 'status.phase=Running' or "
        "'spec.nodeName=node-1'.",
    )
    limit: int = Field(
        default=100, ge=1, le=500, description="At most this many pods in one answer."
    )
    continue_token: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="The 'continue' value of the previous answer, for the next page. Tokens "
        "expire after a few minutes (then list again from the start).",
    )


class CreateConfigMapArgs(_Named):
    """Arguments of kubernetes.create_configmap."""

    data: Annotated[dict[str, str], AfterValidator(_check_data)] = Field(
        default_factory=dict,
        max_length=1000,
        description="The config map's data: keys of letters, digits, '-', '_' and '.', "
        "string values; 1 MiB in all at most.",
    )
    labels: Annotated[dict[str, str], AfterValidator(_check_labels)] = Field(
        default_factory=dict, max_length=64, description="Labels to put on the config map."
    )


class DeleteConfigMapArgs(_Named):
    """Arguments of kubernetes.delete_configmap."""

    uid: Uid = Field(
        description="Delete only the config map with this uid (the uid create_configmap "
        "returned): a different config map that took the name later is left alone."
    )
    content_hash: ContentHash | None = Field(
        default=None,
        description="If given (create_configmap's content_hash), delete only while the config "
        "map's data and labels are still what the call wrote; an edited one is left, and the "
        "call fails saying so.",
    )


class DeletePodArgs(_Named):
    """Arguments of kubernetes.delete_pod."""

    uid: Uid | None = Field(
        default=None,
        description="Delete only the pod with this uid (from list_pods): a pod that took the "
        "same name later, as a StatefulSet's replacement does, is left alone.",
    )
    grace_period_seconds: int | None = Field(
        default=None,
        ge=0,
        le=86400,
        description="Seconds the pod is given to stop; default: the pod's own "
        "terminationGracePeriodSeconds (usually 30). 0 stops it at once.",
    )
