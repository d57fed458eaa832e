"""What a client's Metadata request would have returned from this image (``KRaftMetadataCache``)."""

from kraftlog.state.ids import LOST, MIGRATING, UNASSIGNED, key_order
from kraftlog.state.image import ClusterImage

#: Topic.INTERNAL_TOPICS: flagged isInternal in the response.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def _endpoint(registration: dict, listener: str | None) -> dict | None:
    """The broker's endpoint on ``listener``, or its first advertised one when none is asked for."""
    endpoints = registration["endPoints"]
    if listener is None:
        return endpoints[0] if endpoints else None
    return next((e for e in endpoints if e["name"] == listener), None)


def _directory_online(registration: dict, directory: str) -> bool:
    """``DirectoryId.isOnline``: unplaced and pre-JBOD replicas count as online, and so does every
    directory of a broker that reports none (it registered before directories were tracked)."""
    if directory in (UNASSIGNED, MIGRATING):
        return True
    if directory == LOST:
        return False
    return not registration["logDirs"] or directory in registration["logDirs"]


def metadata_response(image: ClusterImage, listener: str | None = None) -> dict:
    """Brokers and topics as a MetadataResponse lists them, for ``listener``.

    Only unfenced brokers are alive. A partition whose leader is not alive reports leader -1 with
    LEADER_NOT_AVAILABLE (LISTENER_NOT_FOUND if it is alive but lacks the listener); a replica is
    offline when its broker is unregistered, fenced, lacks the listener, or its directory is offline."""
    registrations = image.brokers.registrations

    def alive(broker_id: int) -> dict | None:
        registration = registrations.get(broker_id)
        return None if registration is None or registration["fenced"] else registration

    def offline(broker_id: int, directory: str) -> bool:
        registration = alive(broker_id)
        return (
            registration is None
            or _endpoint(registration, listener) is None
            or not _directory_online(registration, directory)
        )

    brokers = []
    for broker_id in sorted(registrations):
        registration = alive(broker_id)
        endpoint = None if registration is None else _endpoint(registration, listener)
        if endpoint is not None:
            brokers.append(
                {"nodeId": broker_id, "host": endpoint["host"], "port": endpoint["port"],
                 "rack": registration["rack"]}
            )

    topics = []
    for name, topic_id in sorted(image.topics.id_by_name.items()):
        partitions = image.topics.by_id[topic_id]["partitions"]
        rendered = []
        for partition_id in sorted(partitions, key=key_order):
            p = partitions[partition_id]
            leader = alive(p["leader"])
            if leader is None:
                error, leader_id = "LEADER_NOT_AVAILABLE", -1
            elif _endpoint(leader, listener) is None:
                error, leader_id = "LISTENER_NOT_FOUND", -1
            else:
                error, leader_id = "NONE", p["leader"]
            rendered.append({
                "partitionIndex": partition_id,
                "error": error,
                "leaderId": leader_id,
                "leaderEpoch": p["leaderEpoch"],
                "replicaNodes": list(p["replicas"]),
                "isrNodes": list(p["isr"]),
                "offlineReplicas": [
                    r for r, d in zip(p["replicas"], p["directories"], strict=True) if offline(r, d)
                ],
            })
        topics.append(
            {"name": name, "topicId": topic_id, "isInternal": name in INTERNAL_TOPICS, "partitions": rendered}
        )
    return {"brokers": brokers, "topics": topics}
