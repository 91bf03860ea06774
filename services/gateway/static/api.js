// The management API client: the bearer token lives in sessionStorage (this tab only).
const TOKEN_KEY = "mnemogate.studio.token";

export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(extra = {}) {
  return { Authorization: `Bearer ${token()}`, ...extra };
}

async function errorOf(response) {
  let message = `${response.status} ${response.statusText}`;
  let code = null;
  try {
    const body = await response.json();
    if (body && body.error) {
      message = body.error.message || message;
      code = body.error.code || null;
    }
  } catch (_ignored) {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message, code);
}

/** Call `path` with JSON in and out; throws ApiError with the API's message on 4xx/5xx. */
export async function api(path, { method = "GET", body, query } = {}) {
  let url = path;
  if (query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
    }
    const text = params.toString();
    if (text) url += `?${text}`;
  }
  const init = { method, headers: authHeaders() };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(url, init);
  if (!response.ok) throw await errorOf(response);
  return response.status === 204 ? null : response.json();
}

/** Stream the JSONL export; `onLine(count)` after each chunk; returns the whole text. */
export async function exportLines(query, onLine) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v) params.set(k, v);
  const response = await fetch(`/api/memory/export?${params}`, { headers: authHeaders() });
  if (!response.ok) throw await errorOf(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parts = [];
  let lines = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const text = decoder.decode(value, { stream: true });
    parts.push(text);
    lines += text.split("\n").length - 1;
    onLine(lines);
  }
  parts.push(decoder.decode());
  return parts.join("");
}

/** Upload a JSONL file with upload progress (`onProgress(fraction)`); resolves to the result. */
export function importFile(file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/memory/import");
    xhr.setRequestHeader("Authorization", `Bearer ${token()}`);
    xhr.setRequestHeader("Content-Type", "application/x-ndjson");
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    xhr.onload = () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch (_ignored) {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(new ApiError(xhr.status, (body && body.error && body.error.message) || `HTTP ${xhr.status}`, null));
    };
    xhr.onerror = () => reject(new ApiError(0, "network error during import", null));
    xhr.send(file);
  });
}
