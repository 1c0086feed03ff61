"""A server that is registered or edited is polled at once."""

from functools import partial

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from partdash.polling.scheduling import request_poll
from partdash.servers.models import Server


@receiver(post_save, sender=Server, dispatch_uid="poll-new-or-edited-server")
def poll_after_save(sender, instance: Server, **kwargs) -> None:
    if not instance.enabled:
        return
    transaction.on_commit(partial(request_poll, instance.pk, force=True))
