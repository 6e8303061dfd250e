// Small helpers the pages share: form fields, messages next to a form, and one submission at a time.

/** The form's named fields as strings; empty ones left out when asked. */
export function fieldsOf (form, { skipEmpty = false } = {}) {
  const fields = {}
  for (const [name, value] of new FormData(form)) {
    if (typeof value === 'string' && !(skipEmpty && value.trim() === '')) fields[name] = value
  }
  return fields
}

/** Shows a message in an element with class "message" (a polite live region, so screen readers hear it). */
export function say (element, text, kind = 'ok') {
  element.dataset.kind = kind
  element.textContent = text
}

/** The message element of a form or section. */
export function messageOf (container) {
  return container.querySelector('.message')
}

/** Marks the inputs named in `names` invalid (or valid again), tied to the form's message for screen readers. */
export function markInvalid (form, names) {
  const message = messageOf(form)
  for (const input of form.querySelectorAll('input[name]')) {
    const invalid = names.includes(input.name)
    input.setAttribute('aria-invalid', String(invalid))
    if (invalid && message?.id) input.setAttribute('aria-describedby', message.id)
    else input.removeAttribute('aria-describedby')
  }
}

/**
 * Runs `handler(form)` on submit with the browser's own submission stopped, its
 * buttons disabled meanwhile so a double press sends one request.
 */
export function onSubmit (form, handler) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const buttons = [...form.querySelectorAll('button')]
    for (const button of buttons) button.disabled = true
    try {
      await handler(form)
    } finally {
      for (const button of buttons) button.disabled = false
    }
  })
}

/** Runs `handler()` on a button's click, the button disabled meanwhile. */
export function onClick (button, handler) {
  button.addEventListener('click', async () => {
    const focused = document.activeElement === button
    button.disabled = true
    try {
      await handler()
    } finally {
      button.disabled = false
      // A disabled button drops the focus; give it back to a keyboard user when the button is still there.
      if (focused && button.isConnected && !button.hidden && document.activeElement === document.body) button.focus()
    }
  })
}

/**
 * The mailed token in the page's fragment (#token=…), taken out of the address bar and the history at once.
 * Another link opened in the same tab changes only the fragment, which loads nothing: start over with it.
 */
export function takeFragmentToken () {
  window.addEventListener('hashchange', () => window.location.reload())
  const token = new URLSearchParams(window.location.hash.slice(1)).get('token')
  if (window.location.hash !== '') window.history.replaceState(null, '', window.location.pathname + window.location.search)
  return token !== null && /^[A-Za-z0-9_-]{1,256}$/.test(token) ? token : null
}

/** A date and time as the visitor's locale writes it, in a <time> element. */
export function timeElement (iso) {
  const element = document.createElement('time')
  element.dateTime = iso
  element.textContent = new Date(iso).toLocaleString()
  return element
}
