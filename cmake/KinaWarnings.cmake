# Warning flags shared by every kina target: kina_set_warnings(<target>).
function(kina_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(KINA_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
