/* engine/embed.S — web.js, prelude.js and the lazily loaded modules
 * (fetch.js, crypto.js, fs.js, format.js, process.js) embedded in .rodata; the Node/Web surface's
 * parts are in build/gen/node-parts.S (engine/node/build.mjs).
 * The texts are the files of build/gen/js: engine's with comments and indentation
 * taken out by esbuild (Makefile, EMBED_JS); found through -I$(BUILD).
 * Each blob is followed by a NUL byte, not counted by *_end, so the C side
 * can hand it to JSStringCreateWithUTF8CString directly. */
        .section .rodata
        .global chidori_web_js
        .global chidori_web_js_end
        .type chidori_web_js, @object
        .balign 16
chidori_web_js:
        .incbin "gen/js/web.js"
chidori_web_js_end:
        .byte 0

        .global chidori_prelude_js
        .global chidori_prelude_js_end
        .type chidori_prelude_js, @object
        .balign 16
chidori_prelude_js:
        .incbin "gen/js/prelude.js"
chidori_prelude_js_end:
        .byte 0

        .global chidori_fetch_js
        .type chidori_fetch_js, @object
        .balign 16
chidori_fetch_js:
        .incbin "gen/js/fetch.js"
        .byte 0

        .global chidori_crypto_js
        .type chidori_crypto_js, @object
        .balign 16
chidori_crypto_js:
        .incbin "gen/js/crypto.js"
        .byte 0

        .global chidori_fs_js
        .type chidori_fs_js, @object
        .balign 16
chidori_fs_js:
        .incbin "gen/js/fs.js"
        .byte 0

        .global chidori_format_js
        .type chidori_format_js, @object
        .balign 16
chidori_format_js:
        .incbin "gen/js/format.js"
        .byte 0

        .global chidori_process_js
        .type chidori_process_js, @object
        .balign 16
chidori_process_js:
        .incbin "gen/js/process.js"
        .byte 0

        .section .note.GNU-stack,"",@progbits
