# Exit codes and messages of `pocket convert` / `pocket synth` (0 ok,
# 1 runtime error, 2 usage error), run through the real CLI.
if(TARGET pocket_cli)
  set(_cli ${POCKET_CLI_COMMAND})
  set(_data ${CMAKE_CURRENT_SOURCE_DIR}/data)
  set(_out ${CMAKE_BINARY_DIR}/convert_cli_tmp)
  file(MAKE_DIRECTORY ${_out})
  # name, expected exit status, text the output must contain, command...
  set(_check [=[st=$0; re=$1; shift; out=$("$@" 2>&1); rc=$?; printf '%s\n' "$out"
[ "$rc" -eq "$st" ] || { echo "exit status $rc, expected $st"; exit 1; }
printf '%s' "$out" | grep -q -F -e "$re"]=])
  function(pocket_convert_cli_test name status text)
    add_test(NAME ${name} COMMAND sh -c "${_check}" ${status} "${text}" ${ARGN})
  endfunction()
  pocket_convert_cli_test(convert_cli_help 0 "usage: pocket convert" ${_cli} convert --help)
  pocket_convert_cli_test(convert_cli_llama2c 0 "47 tensors"
    ${_cli} convert ${_data}/stories260K/stories260K.bin --quant f32
    --tokenizer ${_data}/stories260K/tok512.model -o ${_out}/stories.pocket)
  pocket_convert_cli_test(convert_cli_needs_tokenizer 1 "--tokenizer"
    ${_cli} convert ${_data}/stories260K/stories260K.bin -o ${_out}/x.pocket)
  pocket_convert_cli_test(convert_cli_bad_quant 2 "--quant 'q5'"
    ${_cli} convert ${_data}/stories260K-hf --quant q5 -o ${_out}/x.pocket)
  pocket_convert_cli_test(convert_cli_no_output 2 "-o OUT.pocket is required"
    ${_cli} convert ${_data}/stories260K-hf)
  pocket_convert_cli_test(synth_cli_help 0 "usage: pocket synth" ${_cli} synth --help)
  pocket_convert_cli_test(synth_cli_tiny_llama 0 "20 tensors"
    ${_cli} synth --preset tiny-llama --seed 3 -o ${_out}/tiny-llama.pocket)
  pocket_convert_cli_test(synth_cli_unknown_preset 2 "presets: pocket-0.3b"
    ${_cli} synth --preset nope -o ${_out}/x.pocket)
  pocket_convert_cli_test(synth_cli_bad_layout 2 "--layout 'rows8' is not a layout"
    ${_cli} synth --preset tiny-llama --layout rows8 -o ${_out}/x.pocket)
  pocket_convert_cli_test(convert_cli_bad_layout 2 "--layout 'planar' is not a layout"
    ${_cli} convert ${_data}/stories260K-hf --layout planar -o ${_out}/x.pocket)
endif()
