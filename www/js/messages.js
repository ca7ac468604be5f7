// The messages panel: one execution parked on a channel, a button that sends
// it a message through the package's Inbox, and its log as it grows. The
// delivery (MESSAGE_CONSUMED then EXECUTION_RESUMED, in one append) is the
// core's DeliverMachine, running in the browser; the body, once resumed,
// parks on the channel again so the next message is delivered the same way.

const ID = 'order-1';
const WAIT = { kind: 'MESSAGE', channel: 'approval' };

/** Starts the panel with the package `pkg`; `$` finds an element by id. */
export async function startMessages(pkg, $) {
  const events = new pkg.MemoryEventStore();
  const timers = new pkg.MemoryTimerStore();
  const inbox = new pkg.Inbox(events, timers);
  await events.append(ID, { kind: 'EXECUTION_STARTED', at: Date.now() });
  await inbox.park(ID, [WAIT]);
  let sent = 0;

  const show = async (status) => {
    const log = await events.readRange(ID, 1);
    const items = log.map((e) => {
      const item = document.createElement('li');
      item.dataset.kind = e.kind;
      const detail =
        e.kind === 'EXECUTION_SUSPENDED' ? `waits on ${e.payload.waits.map((w) => w.channel ?? w.kind).join(', ')}`
        : e.kind === 'MESSAGE_CONSUMED' ? `${e.payload.channel} / ${e.payload.messageId}`
        : e.kind === 'EXECUTION_RESUMED' ? `answer ${JSON.stringify(e.payload.answer)}`
        : '';
      item.append(Object.assign(document.createElement('b'), { textContent: `#${e.sequence} ${e.kind}` }), ` ${detail}`);
      return item;
    });
    $('message-log').replaceChildren(...items);
    $('message-status').textContent = status;
  };

  $('send-message').addEventListener('click', async () => {
    const button = $('send-message');
    button.disabled = true;
    try {
      sent += 1;
      const answer = await inbox.notify({ executionId: ID, channel: 'approval', messageId: `m${sent}`, payload: { approved: true, n: sent } });
      // The body ran and waits for the next message.
      if (answer.result === 'delivered') await inbox.park(ID, [WAIT], { fence: answer.resumed.fence });
      await show(`message m${sent}: ${answer.result}${answer.result === 'delivered' ? ', then the body parked again' : ''}`);
    } catch (error) {
      console.error(error);
      await show(`failed: ${error?.message ?? error}`);
    } finally {
      button.disabled = false;
    }
  });
  await show(`${ID} is parked on the channel "approval"`);
  $('send-message').disabled = false;
}
