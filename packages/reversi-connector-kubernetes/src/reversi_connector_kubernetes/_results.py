"""The result models of the kubernetes tools: what each tool returns, field by field.

They are the manifests' ``output_schema``: the registry checks every ``result.`` source of
an argument map or a ``requires`` declaration against them, and
:meth:`reversi_core.connector.Connector.call` checks every result against them. All are
closed. ``namespace`` and ``name`` come back as given. The shapes follow the API
server's Deployment, Scale, Pod and ConfigMap objects
(https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/deployment-v1/,
https://kubernetes.io/docs/reference/kubernetes-api/autoscaling-resources/scale-v1/,
https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/,
https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/config-map-v1/).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ConfigMapCreated",
    "ConfigMapDeleted",
    "DeploymentCondition",
    "DeploymentRead",
    "DeploymentRestarted",
    "DeploymentScaled",
    "PodDeleted",
    "PodSummary",
    "PodsListed",
    "ReplicasRestored",
]

_NAMESPACE = "The namespace, as given."
_NAME = "The object's name, as given."
_UID = "The object's metadata.uid (unique over the cluster's lifetime)."
_RV = "The object's metadata.resourceVersion after the call (opaque)."


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Named(_Result):
    namespace: str = Field(description=_NAMESPACE)
    name: str = Field(description=_NAME)


class DeploymentCondition(_Result):
    """One entry of a deployment's status.conditions."""

    type: str = Field(description="'Available', 'Progressing' or 'ReplicaFailure'.")
    status: str = Field(description="'True', 'False' or 'Unknown'.")
    reason: str | None = Field(description="A one-word reason, such as 'NewReplicaSetAvailable'.")
    message: str | None = Field(description="A sentence saying why.")


class DeploymentRead(_Named):
    """Result of kubernetes.get_deployment."""

    uid: str = Field(description=_UID)
    resource_version: str | None = Field(description="Its metadata.resourceVersion (opaque).")
    generation: int | None = Field(description="metadata.generation: bumped by each spec change.")
    observed_generation: int | None = Field(
        description="status.observedGeneration: the generation the controller has acted on."
    )
    replicas: int = Field(description="spec.replicas: the desired number of pods.")
    ready_replicas: int = Field(description="status.readyReplicas (0 when absent).")
    available_replicas: int = Field(description="status.availableReplicas (0 when absent).")
    updated_replicas: int = Field(description="status.updatedReplicas (0 when absent).")
    paused: bool = Field(description="spec.paused: a paused deployment does not roll out.")
    restarted_at: str | None = Field(
        description="The pod template's kubectl.kubernetes.io/restartedAt annotation: when it "
        "was last restarted with rollout_restart or 'kubectl rollout restart'."
    )
    images: list[str] = Field(description="The container images of the pod template.")
    selector: dict[str, str] = Field(description="spec.selector.matchLabels.")
    conditions: list[DeploymentCondition] = Field(description="status.conditions.")


class DeploymentScaled(_Named):
    """Result of kubernetes.scale_deployment."""

    previous_replicas: int = Field(
        description="The replica count before the call (kubernetes.restore_replicas takes it)."
    )
    replicas: int = Field(description="The replica count this call set.")
    uid: str = Field(description="The deployment's metadata.uid.")
    resource_version: str | None = Field(description=_RV)
    changed: bool = Field(description="False when the deployment had that count already.")


class ReplicasRestored(_Named):
    """Result of kubernetes.restore_replicas."""

    replicas: int = Field(description="The replica count the deployment has now.")
    restored: bool = Field(
        description="False when it had that count already (nothing was written)."
    )


class PodSummary(_Result):
    """One pod of kubernetes.list_pods."""

    name: str = Field(description="The pod's name.")
    uid: str | None = Field(description="Its metadata.uid (delete_pod takes it).")
    phase: str | None = Field(
        description="status.phase: 'Pending', 'Running', 'Succeeded', 'Failed' or 'Unknown'."
    )
    ready: bool = Field(description="Whether its Ready condition is 'True'.")
    restarts: int = Field(description="Container restarts, summed over its containers.")
    node: str | None = Field(description="spec.nodeName: the node it runs on, if scheduled.")
    labels: dict[str, str] = Field(description="Its labels.")
    owner: str | None = Field(
        description="Its controlling owner as 'Kind/name' (such as 'ReplicaSet/web-5d8f'), if any."
    )
    created_at: str | None = Field(description="metadata.creationTimestamp (RFC 3339).")
    terminating: bool = Field(description="Whether its deletion has begun (deletionTimestamp set).")


class PodsListed(_Result):
    """Result of kubernetes.list_pods."""

    namespace: str = Field(description=_NAMESPACE)
    pods: list[PodSummary] = Field(description="The pods of this page, in the server's order.")
    continue_token: str | None = Field(
        description="Pass it as continue_token for the next page; null on the last page."
    )
    remaining: int | None = Field(
        description="How many more pods the server counts after this page (an estimate), or null."
    )


class ConfigMapCreated(_Named):
    """Result of kubernetes.create_configmap."""

    uid: str = Field(description=_UID + " kubernetes.delete_configmap takes it.")
    resource_version: str = Field(description="Its metadata.resourceVersion as created.")
    content_hash: str = Field(
        description="'sha256:' and the hash of its data, binaryData and labels as the API server "
        "stored them (kubernetes.delete_configmap compares it, to leave an edited one alone)."
    )
    keys: list[str] = Field(description="The keys of its data, sorted.")


class ConfigMapDeleted(_Named):
    """Result of kubernetes.delete_configmap."""

    uid: str = Field(description="The uid the call was given.")
    deleted: bool = Field(
        description="True when this call deleted it; false when it was gone already, or the "
        "name now belongs to a different config map (which is left alone)."
    )
    replaced: bool = Field(
        description="True when a different config map (another uid) has the name now."
    )


class PodDeleted(_Named):
    """Result of kubernetes.delete_pod."""

    uid: str | None = Field(description="The deleted pod's metadata.uid.")
    grace_period_seconds: int | None = Field(
        description="The seconds the pod was given to stop (metadata.deletionGracePeriodSeconds)."
    )
    deletion_timestamp: str | None = Field(
        description="When the pod's deletion began (metadata.deletionTimestamp), if the answer "
        "says."
    )


class DeploymentRestarted(_Named):
    """Result of kubernetes.rollout_restart."""

    restarted_at: str = Field(
        description="The kubectl.kubernetes.io/restartedAt value this call set (RFC 3339, UTC)."
    )
    uid: str = Field(description="The deployment's metadata.uid.")
    generation: int | None = Field(description="metadata.generation after the call.")
