"""Every KRaft metadata record type (api keys 0-29), declared like Kafka's JSON specs.

Source: ``metadata/src/main/resources/common/metadata/*.json`` (reference section 3.3); keys 6
and 16 are retired but still decodable, 13 was never assigned. All records are flexible from
version 0. To add a version, widen the record's ``valid`` range and add or widen field rows.
Unlisted defaults are the type's: 0, false, "", empty array, the zero uuid.

Not declared, because no stored copy of Kafka's source holds their layout: RegisterBrokerRecord v4
and BrokerRegistrationChangeRecord v3 (cordoned log dirs, MetadataVersion 4.3-IV0). Such records
are read by the rule for versions newer than this table (``records.decode_metadata``): at the
highest declared version, their new tagged field kept raw.
"""

from kraftlog.schema.fields import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    Field,
    Message,
    Struct,
    array,
)

NULL = None

# Nested structs. Field(name, type, versions, nullable, tag, default)
BrokerEndpoint = Struct("BrokerEndpoint", [
    Field("Name",                   STRING,         "0+"),
    Field("Host",                   STRING,         "0+"),
    Field("Port",                   UINT16,         "0+"),
    Field("SecurityProtocol",       INT16,          "0+"),
])
BrokerFeature = Struct("BrokerFeature", [
    Field("Name",                   STRING,         "0+"),
    Field("MinSupportedVersion",    INT16,          "0+"),
    Field("MaxSupportedVersion",    INT16,          "0+"),
])
ControllerEndpoint = Struct("ControllerEndpoint", BrokerEndpoint.fields)
ControllerFeature = Struct("ControllerFeature", BrokerFeature.fields)
EntityData = Struct("EntityData", [
    Field("EntityType",             STRING,         "0+"),
    Field("EntityName",             STRING,         "0+", nullable="0+"),
])

METADATA_RECORDS: tuple[Message, ...] = (
    Message(0, "RegisterBrokerRecord", valid="0-3", fields=[
        Field("BrokerId",               INT32,          "0+"),
        Field("IsMigratingZkBroker",    BOOL,           "2+", default=False),
        Field("IncarnationId",          UUID,           "0+"),
        Field("BrokerEpoch",            INT64,          "0+"),
        Field("EndPoints",              array(BrokerEndpoint), "0+"),
        Field("Features",               array(BrokerFeature), "0+"),
        Field("Rack",                   STRING,         "0+", nullable="0+"),
        Field("Fenced",                 BOOL,           "0+", default=True),
        Field("InControlledShutdown",   BOOL,           "1+", default=False),
        Field("LogDirs",                array(UUID),    "3+", tag=0),
    ]),
    Message(1, "UnregisterBrokerRecord", valid="0", fields=[
        Field("BrokerId",               INT32,          "0+"),
        Field("BrokerEpoch",            INT64,          "0+"),
    ]),
    Message(2, "TopicRecord", valid="0", fields=[
        Field("Name",                   STRING,         "0+"),
        Field("TopicId",                UUID,           "0+"),
    ]),
    Message(3, "PartitionRecord", valid="0-2", fields=[
        Field("PartitionId",            INT32,          "0+", default=-1),
        Field("TopicId",                UUID,           "0+"),
        Field("Replicas",               array(INT32),   "0+"),
        Field("Isr",                    array(INT32),   "0+"),
        Field("RemovingReplicas",       array(INT32),   "0+"),
        Field("AddingReplicas",         array(INT32),   "0+"),
        Field("Leader",                 INT32,          "0+", default=-1),
        Field("LeaderRecoveryState",    INT8,           "0+", tag=0, default=0),
        Field("LeaderEpoch",            INT32,          "0+", default=-1),
        Field("PartitionEpoch",         INT32,          "0+", default=-1),
        Field("Directories",            array(UUID),    "1+"),
        Field("EligibleLeaderReplicas", array(INT32),   "2+", nullable="2+", tag=1, default=NULL),
        Field("LastKnownElr",           array(INT32),   "2+", nullable="2+", tag=2, default=NULL),
    ]),
    Message(4, "ConfigRecord", valid="0", fields=[
        Field("ResourceType",           INT8,           "0+"),
        Field("ResourceName",           STRING,         "0+"),
        Field("Name",                   STRING,         "0+"),
        Field("Value",                  STRING,         "0+", nullable="0+"),
    ]),
    Message(5, "PartitionChangeRecord", valid="0-2", fields=[
        Field("PartitionId",            INT32,          "0+", default=-1),
        Field("TopicId",                UUID,           "0+"),
        Field("Isr",                    array(INT32),   "0+", nullable="0+", tag=0, default=NULL),
        Field("Leader",                 INT32,          "0+", tag=1, default=-2),
        Field("Replicas",               array(INT32),   "0+", nullable="0+", tag=2, default=NULL),
        Field("RemovingReplicas",       array(INT32),   "0+", nullable="0+", tag=3, default=NULL),
        Field("AddingReplicas",         array(INT32),   "0+", nullable="0+", tag=4, default=NULL),
        Field("LeaderRecoveryState",    INT8,           "0+", tag=5, default=-1),
        Field("Directories",            array(UUID),    "1+", nullable="1+", tag=8, default=NULL),
        Field("EligibleLeaderReplicas", array(INT32),   "2+", nullable="2+", tag=6, default=NULL),
        Field("LastKnownElr",           array(INT32),   "2+", nullable="2+", tag=7, default=NULL),
    ]),
    Message(6, "AccessControlRecord", valid="0", fields=[  # retired in 3.5
        Field("ResourceType",           INT8,           "0+"),
        Field("ResourceName",           STRING,         "0+", nullable="0+"),
        Field("PatternType",            INT8,           "0+"),
        Field("Principal",              STRING,         "0+"),
        Field("Host",                   STRING,         "0+"),
        Field("Operation",              INT8,           "0+"),
        Field("PermissionType",         INT8,           "0+"),
    ]),
    Message(7, "FenceBrokerRecord", valid="0", fields=[
        Field("Id",                     INT32,          "0+"),
        Field("Epoch",                  INT64,          "0+"),
    ]),
    Message(8, "UnfenceBrokerRecord", valid="0", fields=[
        Field("Id",                     INT32,          "0+"),
        Field("Epoch",                  INT64,          "0+"),
    ]),
    Message(9, "RemoveTopicRecord", valid="0", fields=[
        Field("TopicId",                UUID,           "0+"),
    ]),
    Message(10, "DelegationTokenRecord", valid="0", fields=[
        Field("Owner",                  STRING,         "0+"),
        Field("Requester",              STRING,         "0+"),
        Field("Renewers",               array(STRING),  "0+"),
        Field("IssueTimestamp",         INT64,          "0+"),
        Field("MaxTimestamp",           INT64,          "0+"),
        Field("ExpirationTimestamp",    INT64,          "0+"),
        Field("TokenId",                STRING,         "0+"),
    ]),
    Message(11, "UserScramCredentialRecord", valid="0", fields=[
        Field("Name",                   STRING,         "0+"),
        Field("Mechanism",              INT8,           "0+"),
        Field("Salt",                   BYTES,          "0+"),
        Field("StoredKey",              BYTES,          "0+"),
        Field("ServerKey",              BYTES,          "0+"),
        Field("Iterations",             INT32,          "0+"),
    ]),
    Message(12, "FeatureLevelRecord", valid="0", fields=[
        Field("Name",                   STRING,         "0+"),
        Field("FeatureLevel",           INT16,          "0+"),
    ]),
    Message(14, "ClientQuotaRecord", valid="0", fields=[
        Field("Entity",                 array(EntityData), "0+"),
        Field("Key",                    STRING,         "0+"),
        Field("Value",                  FLOAT64,        "0+"),
        Field("Remove",                 BOOL,           "0+"),
    ]),
    Message(15, "ProducerIdsRecord", valid="0", fields=[
        Field("BrokerId",               INT32,          "0+"),
        Field("BrokerEpoch",            INT64,          "0+", default=-1),
        Field("NextProducerId",         INT64,          "0+"),
    ]),
    Message(16, "RemoveFeatureLevelRecord", valid="0", fields=[  # retired in 3.3
        Field("Name",                   STRING,         "0+"),
    ]),
    Message(17, "BrokerRegistrationChangeRecord", valid="0-2", fields=[
        Field("BrokerId",               INT32,          "0+"),
        Field("BrokerEpoch",            INT64,          "0+"),
        Field("Fenced",                 INT8,           "0+", tag=0, default=0),
        Field("InControlledShutdown",   INT8,           "1+", tag=1, default=0),
        Field("LogDirs",                array(UUID),    "2+", tag=2),
    ]),
    Message(18, "AccessControlEntryRecord", valid="0", fields=[
        Field("Id",                     UUID,           "0+"),
        Field("ResourceType",           INT8,           "0+"),
        Field("ResourceName",           STRING,         "0+"),
        Field("PatternType",            INT8,           "0+"),
        Field("Principal",              STRING,         "0+"),
        Field("Host",                   STRING,         "0+"),
        Field("Operation",              INT8,           "0+"),
        Field("PermissionType",         INT8,           "0+"),
    ]),
    Message(19, "RemoveAccessControlEntryRecord", valid="0", fields=[
        Field("Id",                     UUID,           "0+"),
    ]),
    Message(20, "NoOpRecord", valid="0", fields=[]),
    Message(21, "ZkMigrationStateRecord", valid="0", fields=[
        Field("ZkMigrationState",       INT8,           "0+"),
    ]),
    Message(22, "RemoveUserScramCredentialRecord", valid="0", fields=[
        Field("Name",                   STRING,         "0+"),
        Field("Mechanism",              INT8,           "0+"),
    ]),
    Message(23, "BeginTransactionRecord", valid="0", fields=[
        Field("Name",                   STRING,         "0+", nullable="0+", tag=0, default=NULL),
    ]),
    Message(24, "EndTransactionRecord", valid="0", fields=[]),
    Message(25, "AbortTransactionRecord", valid="0", fields=[
        Field("Reason",                 STRING,         "0+", nullable="0+", tag=0, default=NULL),
    ]),
    Message(26, "RemoveDelegationTokenRecord", valid="0", fields=[
        Field("TokenId",                STRING,         "0+"),
    ]),
    Message(27, "RegisterControllerRecord", valid="0", fields=[
        Field("ControllerId",           INT32,          "0+"),
        Field("IncarnationId",          UUID,           "0+"),
        Field("ZkMigrationReady",       BOOL,           "0+"),
        Field("EndPoints",              array(ControllerEndpoint), "0+"),
        Field("Features",               array(ControllerFeature), "0+"),
    ]),
    Message(28, "ClearElrRecord", valid="0", fields=[  # after Kafka 3.9; "" = every topic
        Field("TopicName",              STRING,         "0+"),
    ]),
    # apache/kafka@4425e970 UnregisterControllerRecord.json (4.4-IV2, KIP-1312). A ClusterIdRecord.json
    # that also claims key 29 (apache/kafka@16b5f8ca) is not in that tree.
    Message(29, "UnregisterControllerRecord", valid="0", fields=[
        Field("ControllerId",           INT32,          "0+"),
    ]),
)

BY_API_KEY: dict[int, Message] = {m.api_key: m for m in METADATA_RECORDS}
BY_TYPE_NAME: dict[str, Message] = {m.type_name: m for m in METADATA_RECORDS}
