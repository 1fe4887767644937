"""The interruption queue: EventBridge -> SQS -> ``CloudEvent`` -> a handler.

As Karpenter's SQS provider (karpenter-provider-aws ``pkg/providers/sqs/sqs.go``
``GetSQSMessages``): ``ReceiveMessage`` long-polls up to 10
messages for ``wait_time_s`` (20 s) with a ``visibility_timeout_s`` (20 s); each body is
parsed with ``events.parse_message`` and handed to the handler (the interruption
controller's ``handle``), then deleted. A message that does not parse is logged and deleted;
an event Joiner ignores (an unknown type, a non-EC2 health event, a ``running`` state) is
deleted unhandled. When the handler raises, the error is logged and the message is left on
the queue, so SQS delivers it again after the visibility timeout. Each call is retried by
botocore (``api.RetrySettings`` on the client); a receive that still fails is logged and the
loop waits ``error_backoff_s`` before the next one, because this loop has to outlive an SQS
outage that botocore's few attempts cannot (Karpenter's interruption controller likewise
returns the error and is reconciled again with backoff: karpenter-provider-aws
``pkg/controllers/interruption/controller.go`` ``Reconcile``). Nothing stops the loop but
``stop()``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from joiner.api.errors import InputError
from joiner.cloudprovider.aws.api import AWSError, aws_errors
from joiner.cloudprovider.events import CloudEvent, parse_message

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

log = logging.getLogger(__name__)

EventHandler = Callable[[CloudEvent], None]


class InterruptionQueue:
    """Polls one SQS queue and feeds its events to ``handler`` (module docstring).

    ``sqs`` is the SQS client (or a fake with ``receive_message`` and ``delete_message``);
    ``sleep`` waits seconds (injected). ``dry_run``: no DeleteMessage; a message comes back
    after its visibility timeout and is not handled twice (its id is remembered). Counters:
    ``handled``, ``ignored``, ``malformed``, ``failed`` (handler raised).
    """

    def __init__(
        self,
        sqs: SQSClient,
        queue_url: str,
        handler: EventHandler,
        *,
        sleep: Callable[[float], None],
        wait_time_s: int = 20,
        visibility_timeout_s: int = 20,
        max_messages: int = 10,
        error_backoff_s: float = 5.0,
        on_deleted: Callable[[], None] | None = None,
        on_queued_s: Callable[[float], None] | None = None,
        wall_now_s: Callable[[], float] | None = None,
        dry_run: bool = False,
    ) -> None:
        self._sqs = sqs
        self.queue_url = queue_url
        self._handler = handler
        self._sleep = sleep
        self.wait_time_s = wait_time_s
        self.visibility_timeout_s = visibility_timeout_s
        self.max_messages = max_messages
        self.error_backoff_s = error_backoff_s
        self.handled = 0
        self.ignored = 0
        self.malformed = 0
        self.failed = 0
        #: Called after each successful DeleteMessage (Karpenter's deleted-messages counter).
        self._on_deleted = on_deleted
        #: Called with the seconds a handled message was on the queue (its SQS
        #: ``SentTimestamp`` to ``wall_now_s()``; Karpenter measures from the event's time).
        self._on_queued_s = on_queued_s
        self._wall_now_s = wall_now_s
        self.dry_run = dry_run
        #: A dry run's messages done with (by MessageId): left on the queue, not redone.
        self._kept: set[str] = set()

    @classmethod
    def from_name(
        cls,
        sqs: SQSClient,
        queue_name: str,
        handler: EventHandler,
        *,
        sleep: Callable[[float], None],
        **options: Any,
    ) -> InterruptionQueue:
        """Resolve the queue URL from its name with ``GetQueueUrl`` (Karpenter's
        ``--interruption-queue`` takes a name).

        Raises:
            AWSError: the queue does not exist or cannot be read.
        """
        with aws_errors():
            url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
        return cls(sqs, url, handler, sleep=sleep, **options)

    def poll_once(self) -> int:
        """One ``ReceiveMessage`` and the handling of what it returned; the number of
        messages received.

        Raises:
            AWSError: ReceiveMessage failed after botocore's retries.
        """
        with aws_errors():
            resp = self._sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=self.max_messages,
                WaitTimeSeconds=self.wait_time_s,
                VisibilityTimeout=self.visibility_timeout_s,
                AttributeNames=["SentTimestamp"],
            )
        messages = resp.get("Messages", [])
        for message in messages:
            self._process(message)
        return len(messages)

    def _process(self, message: MessageTypeDef) -> None:
        message_id = message.get("MessageId", "")
        if message_id and message_id in self._kept:
            log.debug("interruption queue: dry run: message %s seen before", message_id)
            return
        try:
            event = parse_message(str(message.get("Body", "")))
        except InputError as exc:
            self.malformed += 1
            log.warning("interruption queue: malformed message %s deleted: %s", message_id, exc)
            self._delete(message)
            return
        if event is None:
            self.ignored += 1
            log.debug("interruption queue: message %s is not an event Joiner acts on", message_id)
            self._delete(message)
            return
        try:
            self._handler(event)
        except Exception:
            self.failed += 1
            log.exception(
                "interruption queue: handling %s %s failed; it will be delivered again",
                event.kind,
                event.instance_ids,
            )
            return
        self.handled += 1
        sent_ms = (message.get("Attributes") or {}).get("SentTimestamp")
        if self._on_queued_s is not None and self._wall_now_s is not None and sent_ms:
            self._on_queued_s(max(0.0, self._wall_now_s() - int(sent_ms) / 1000))
        self._delete(message)

    def _delete(self, message: MessageTypeDef) -> None:
        if self.dry_run:
            self._kept.add(message.get("MessageId", ""))
            log.info(
                "interruption queue: dry run: message %s left on the queue",
                message.get("MessageId", ""),
            )
            return
        try:
            with aws_errors():
                self._sqs.delete_message(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
            if self._on_deleted is not None:
                self._on_deleted()
        except AWSError as exc:
            log.warning(
                "interruption queue: could not delete message %s (%s); it may come again",
                message.get("MessageId", ""),
                exc,
            )

    def run(self, stop: Callable[[], bool]) -> None:
        """Poll until ``stop()`` is true (checked before each receive). A failed receive is
        logged and retried after ``error_backoff_s``."""
        while not stop():
            try:
                self.poll_once()
            except AWSError as exc:
                log.warning(
                    "interruption queue: receive failed (%s); retrying in %.0f s",
                    exc,
                    self.error_backoff_s,
                )
                self._sleep(self.error_backoff_s)
