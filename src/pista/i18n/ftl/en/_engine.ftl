# The engine's text (pista.engine): how a replayed impact was estimated. Arguments: args/_engine.py.

replay-basis = replay of the profiled steps with the fix applied ({ $what }){ $alone ->
        [more] {" "}({ $alone_us } alone, profiled; part of it is credited to the fixes ranked above it)
        [less] {" "}({ $alone_us } alone, profiled; more once the fixes above it are made)
       *[same] {""}
    }{ $unprofiled ->
        [yes] ; the figure without the profiler ranks it
       *[no] {""}
    }
# what the replay changed: the items, joined by "; "
removed-item = { $count } event(s) removed (ops with what they launched, or kernels and copies)
scaled-host-item = the host time under { $count } event(s) shortened
resized-work-item = { $count } kernel(s) or copies resized
unblocked-item = { $count } wait(s) dropped
readied-item = { $count } kernel(s) or copies run once launched, without the wait the trace shows before them
no-change = no change
