// engine/node/events-web.js — EventTarget, Event, CustomEvent (DOM Standard,
// the parts without a tree: no capture/bubble phases, one target).
'use strict';

const listenersOf = new WeakMap();  // target -> Map(type -> [entry])
const eventState = new WeakMap();   // event -> state

function need(n, min, what) {
        if (n < min)
                throw new TypeError(what + ': ' + min + ' argument' + (min > 1 ? 's' : '') + ' required, but only ' + n + ' present.');
}
function st(ev, what) {
        const s = eventState.get(ev);
        if (!s)
                throw new TypeError('Illegal invocation' + (what ? ' (' + what + ')' : ''));
        return s;
}

class Event {
        constructor(type, init = undefined) {
                need(arguments.length, 1, "Failed to construct 'Event'");
                if (init !== undefined && init !== null && typeof init !== 'object')
                        throw new TypeError("Failed to construct 'Event': The provided value is not of type 'EventInit'.");
                const o = init || {};
                eventState.set(this, {
                        type: String(type), bubbles: !!o.bubbles, cancelable: !!o.cancelable, composed: !!o.composed,
                        target: null, currentTarget: null, phase: 0, canceled: false, stop: false, stopNow: false,
                        dispatching: false, inPassive: false, timeStamp: typeof performance === 'object' ? performance.now() : 0,
                        initialized: true,
                });
        }
        get type() { return st(this).type; }
        get target() { return st(this).target; }
        get srcElement() { return st(this).target; }
        get currentTarget() { return st(this).currentTarget; }
        get eventPhase() { return st(this).phase; }
        get bubbles() { return st(this).bubbles; }
        get cancelable() { return st(this).cancelable; }
        get composed() { return st(this).composed; }
        get defaultPrevented() { return st(this).canceled; }
        get returnValue() { return !st(this).canceled; }
        set returnValue(v) {
                const s = st(this);
                if (!v && s.cancelable && !s.inPassive)
                        s.canceled = true;
        }
        get cancelBubble() { return st(this).stop; }
        set cancelBubble(v) {
                if (v)
                        st(this).stop = true;
        }
        get isTrusted() { return false; }
        get timeStamp() { return st(this).timeStamp; }
        composedPath() {
                const s = st(this);
                return s.dispatching && s.target ? [s.target] : [];
        }
        preventDefault() {
                const s = st(this);
                if (s.cancelable && !s.inPassive)
                        s.canceled = true;
        }
        stopPropagation() { st(this).stop = true; }
        stopImmediatePropagation() {
                const s = st(this);
                s.stop = s.stopNow = true;
        }
}
const PHASES = { NONE: 0, CAPTURING_PHASE: 1, AT_TARGET: 2, BUBBLING_PHASE: 3 };
for (const k of Object.keys(PHASES)) {
        Object.defineProperty(Event, k, { value: PHASES[k], enumerable: true });
        Object.defineProperty(Event.prototype, k, { value: PHASES[k], enumerable: true });
}
Object.defineProperty(Event.prototype, Symbol.toStringTag, { value: 'Event', configurable: true });

const detailOf = new WeakMap();
class CustomEvent extends Event {
        constructor(type, init = undefined) {
                need(arguments.length, 1, "Failed to construct 'CustomEvent'");
                super(type, init);
                detailOf.set(this, init && init.detail !== undefined ? init.detail : null);
        }
        get detail() {
                st(this);
                return detailOf.get(this);
        }
}
Object.defineProperty(CustomEvent.prototype, Symbol.toStringTag, { value: 'CustomEvent', configurable: true });

function flatten(options) {
        if (options !== null && typeof options === 'object')
                return { capture: !!options.capture, once: !!options.once, passive: !!options.passive, signal: options.signal };
        return { capture: !!options, once: false, passive: false, signal: undefined };
}
function reportError(e) {
        queueMicrotask(() => {
                throw e;
        });
}

class EventTarget {
        constructor() {
                listenersOf.set(this, new Map());
        }
        addEventListener(type, callback, options = undefined) {
                need(arguments.length, 2, "Failed to execute 'addEventListener' on 'EventTarget'");
                const map = listenersOf.get(this);
                if (!map)
                        throw new TypeError('Illegal invocation');
                if (callback === null || callback === undefined)
                        return;
                if (typeof callback !== 'function' && typeof callback !== 'object')
                        throw new TypeError("Failed to execute 'addEventListener' on 'EventTarget': parameter 2 is not of type 'Object'.");
                const o = flatten(options);
                type = String(type);
                if (o.signal !== undefined && o.signal !== null && o.signal.aborted)
                        return;
                let list = map.get(type);
                if (!list)
                        map.set(type, (list = []));
                for (const l of list)
                        if (l.callback === callback && l.capture === o.capture)
                                return;
                const entry = { callback, capture: o.capture, once: o.once, passive: o.passive, removed: false };
                list.push(entry);
                if (o.signal !== undefined && o.signal !== null && typeof o.signal.addEventListener === 'function')
                        o.signal.addEventListener('abort', () => this.removeEventListener(type, callback, { capture: o.capture }));
        }
        removeEventListener(type, callback, options = undefined) {
                need(arguments.length, 2, "Failed to execute 'removeEventListener' on 'EventTarget'");
                const map = listenersOf.get(this);
                if (!map)
                        throw new TypeError('Illegal invocation');
                const list = map.get(String(type));
                if (!list)
                        return;
                const capture = flatten(options).capture;
                for (let i = 0; i < list.length; i++) {
                        if (list[i].callback === callback && list[i].capture === capture) {
                                list[i].removed = true;
                                list.splice(i, 1);
                                return;
                        }
                }
        }
        dispatchEvent(event) {
                need(arguments.length, 1, "Failed to execute 'dispatchEvent' on 'EventTarget'");
                const map = listenersOf.get(this);
                if (!map)
                        throw new TypeError('Illegal invocation');
                const s = eventState.get(event);
                if (!s)
                        throw new TypeError("Failed to execute 'dispatchEvent' on 'EventTarget': parameter 1 is not of type 'Event'.");
                if (s.dispatching)
                        throw new (globalThis.DOMException || Error)("Failed to execute 'dispatchEvent' on 'EventTarget': The event is already being dispatched.", 'InvalidStateError');
                s.dispatching = true;
                s.target = s.currentTarget = this;
                s.phase = 2;
                s.stop = s.stopNow = false;
                const list = map.get(s.type);
                if (list) {
                        const copy = list.slice();
                        for (const l of copy) {
                                if (l.removed)
                                        continue;
                                if (l.once)
                                        this.removeEventListener(s.type, l.callback, { capture: l.capture });
                                s.inPassive = l.passive;
                                try {
                                        if (typeof l.callback === 'function')
                                                l.callback.call(this, event);
                                        else if (typeof l.callback.handleEvent === 'function')
                                                l.callback.handleEvent(event);
                                } catch (e) {
                                        reportError(e);
                                }
                                s.inPassive = false;
                                if (s.stopNow)
                                        break;
                        }
                }
                s.dispatching = false;
                s.currentTarget = null;
                s.phase = 0;
                return !s.canceled;
        }
}
Object.defineProperty(EventTarget.prototype, Symbol.toStringTag, { value: 'EventTarget', configurable: true });

module.exports = { Event, CustomEvent, EventTarget };
